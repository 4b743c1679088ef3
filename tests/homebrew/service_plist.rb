# The plist `brew services` would generate from Formula/soakd.rb's service
# block, compared with the LaunchAgent launchd/install.sh renders, on the keys
# that matter. Homebrew is not needed: this models the part of Homebrew's
# Homebrew::Service that the formula uses, and fails on any service field it
# does not model (so a new field in the formula cannot be silently ignored).
#
# Which plist key Homebrew generates from which service field (Homebrew's
# Library/Homebrew/service.rb, Service#to_plist):
#   Label                  <- the formula name: "homebrew.mxcl.soakd" (ours: org.soakd.soakd)
#   ProgramArguments       <- run [...]; arguments starting with "~" are expanded
#   RunAtLoad              <- run_at_load (default true)
#   KeepAlive              <- keep_alive: true/false -> a bool; successful_exit: X ->
#                             {SuccessfulExit: X}; crashed: X -> {Crashed: X}; path: P -> {PathState: P}
#   ThrottleInterval       <- throttle_interval
#   TimeOut                <- restart_delay (not used)
#   ProcessType            <- process_type, capitalized (:interactive -> "Interactive")
#   Nice                   <- nice (not used)
#   WorkingDirectory       <- working_dir, expanded
#   StandardOutPath        <- log_path, expanded
#   StandardErrorPath      <- error_log_path, expanded
#   EnvironmentVariables   <- environment_variables
#   LimitLoadToSessionType <- always [Aqua Background LoginWindow StandardIO System]
# Keys ours has that no service field generates, and why that is fine:
#   ExitTimeOut 30         launchd's default is 20 s, still above soakd's 10 s graceful stop
#   LowPriorityIO false    launchd's default for a job without it
# Usage: ruby service_plist.rb REPOSITORY_ROOT
require "rexml/document"

ROOT = ARGV.fetch(0)
HOME = "/Users/op"
ENV["HOME"] = HOME
PREFIX = "/opt/homebrew"

# ---- just enough of Homebrew to load the formula -----------------------------
class Formula
  class << self
    attr_reader :service_block, :dependencies

    def desc(*) = nil
    def homepage(*) = nil
    def head(*, **) = nil
    def url(*, **) = nil
    def sha256(*) = nil
    def license(*) = nil
    def test(&) = nil

    def depends_on(dep)
      (@dependencies ||= []) << dep
    end

    def service(&block)
      @service_block = block
    end
  end

  def name = self.class.name.downcase
  def opt_bin = Pathname.new("#{PREFIX}/opt/#{name}/bin")
  def opt_pkgshare = Pathname.new("#{PREFIX}/opt/#{name}/share/#{name}")
end

class Pathname
  def initialize(p) = @p = p.to_s
  def /(other) = Pathname.new("#{@p}/#{other}")
  def to_s = @p
end

# ---- the service fields the formula uses, mapped as Homebrew maps them --------
class Service
  def initialize(formula)
    @formula = formula
    @run = []
    @run_at_load = true
    @keep_alive = {}
    @environment_variables = {}
  end

  def opt_bin = @formula.opt_bin
  def run(cmd) = @run = Array(cmd).map(&:to_s)
  def run_at_load(v) = @run_at_load = v
  def keep_alive(v) = @keep_alive = (v == true || v == false) ? { always: v } : v
  def throttle_interval(v) = @throttle_interval = v
  def process_type(v) = @process_type = v
  def working_dir(v) = @working_dir = v.to_s
  def log_path(v) = @log_path = v.to_s
  def error_log_path(v) = @error_log_path = v.to_s
  def environment_variables(v) = @environment_variables = v.transform_values(&:to_s)

  def method_missing(name, *)
    abort "FAIL: service field `#{name}` is not modelled here: add how Homebrew maps it to a plist key"
  end

  def respond_to_missing?(*) = false

  def to_plist
    p = {
      "Label" => "homebrew.mxcl.#{@formula.name}",
      "ProgramArguments" => @run.map { |a| a.start_with?("~") ? File.expand_path(a) : a },
      "RunAtLoad" => @run_at_load == true,
    }
    p["ThrottleInterval"] = @throttle_interval if @throttle_interval
    p["ProcessType"] = @process_type.to_s.capitalize if @process_type
    p["WorkingDirectory"] = File.expand_path(@working_dir) if @working_dir
    p["StandardOutPath"] = File.expand_path(@log_path) if @log_path
    p["StandardErrorPath"] = File.expand_path(@error_log_path) if @error_log_path
    p["EnvironmentVariables"] = @environment_variables.transform_keys(&:to_s) unless @environment_variables.empty?
    if !@keep_alive.empty? && @keep_alive[:always] != false
      if @keep_alive[:always]
        p["KeepAlive"] = true
      elsif @keep_alive.key?(:successful_exit)
        p["KeepAlive"] = { "SuccessfulExit" => @keep_alive[:successful_exit] }
      elsif @keep_alive.key?(:crashed)
        p["KeepAlive"] = { "Crashed" => @keep_alive[:crashed] }
      end
    end
    p["LimitLoadToSessionType"] = %w[Aqua Background LoginWindow StandardIO System]
    p
  end
end

# ---- our plist, as install.sh renders it --------------------------------------
def plist_value(e)
  case e.name
  when "string" then e.text.to_s
  when "integer" then Integer(e.text)
  when "true" then true
  when "false" then false
  when "array" then e.elements.map { |c| plist_value(c) }
  when "dict"
    h = {}
    e.elements.each_slice(2) { |k, v| h[k.text] = plist_value(v) }
    h
  else abort "FAIL: unexpected plist element #{e.name}"
  end
end

load File.join(ROOT, "Formula", "soakd.rb")
formula = Soakd.new
service = Service.new(formula)
service.instance_eval(&Soakd.service_block)
brew = service.to_plist

%w[cmake pkg-config curl libuv nlohmann-json spdlog sqlite catch2].each do |dep|
  found = Soakd.dependencies.any? { |d| d == dep || (d.is_a?(Hash) && d.key?(dep)) }
  abort "FAIL: the formula does not depend on #{dep}" unless found
end
{ "cmake" => :build, "pkg-config" => :build, "catch2" => :test }.each do |dep, tag|
  ok = Soakd.dependencies.any? { |d| d.is_a?(Hash) && d[dep] == tag }
  abort "FAIL: #{dep} should be a #{tag} dependency" unless ok
end

config = "#{HOME}/Library/Application Support/soakd/soakd.json"
xml = IO.popen(["sh", File.join(ROOT, "launchd/install.sh"), "render", "--bin", "#{PREFIX}/opt/soakd/bin/soakd",
                "--config", config, "--user", "op"], &:read)
abort "FAIL: install.sh render failed" unless $?.success?
ours = plist_value(REXML::Document.new(xml).root.elements[1])

failures = []
%w[ProgramArguments RunAtLoad KeepAlive ThrottleInterval ProcessType WorkingDirectory StandardOutPath
   StandardErrorPath EnvironmentVariables].each do |key|
  next if brew[key] == ours[key]

  failures << "#{key}: brew services would write #{brew[key].inspect}, launchd/ has #{ours[key].inspect}"
end
# Every key ours has is either generated or listed above as fine without.
(ours.keys - brew.keys - %w[Label ExitTimeOut LowPriorityIO]).each do |key|
  failures << "#{key}: in launchd/'s plist but no service field generates it (map it, or say why it is fine)"
end
failures << "ExitTimeOut: ours must exceed launchd's 20 s default too" unless ours["ExitTimeOut"].to_i >= 20
unless failures.empty?
  puts failures.map { |f| "FAIL: #{f}" }
  exit 1
end
puts "ok: brew services would generate launchd/'s LaunchAgent (#{brew.keys.size} keys; Label differs by design)"
