# Homebrew formula for soakd, built from this repository (a tap of its own):
#
#   brew tap soakd/soakd /path/to/this/repository   # or its git URL
#   brew install --HEAD soakd
#   cp "$(brew --prefix)/share/soakd/examples/soakd.example.json" \
#      ~/Library/Application\ Support/soakd/soakd.json   # then edit it
#   brew services start soakd
#
# `brew services` turns the service block below into a LaunchAgent equivalent
# to launchd/org.soakd.soakd.agent.plist.in (tests/homebrew/ checks which keys
# match and why the others differ). Use one or the other, not both: a second
# soakd on the same store is refused.
class Soakd < Formula
  desc "Soak and canary daemon for local LLM inference runtimes"
  homepage "file://#{File.expand_path("../README.md", __dir__)}"
  head "file://#{File.expand_path("..", __dir__)}", using: :git, branch: "main"

  depends_on "cmake" => :build
  depends_on "pkg-config" => :build
  # Catch2 builds the test suite only; the formula does not build it
  # (-DSOAKD_BUILD_TESTS=OFF), `brew test` runs the installed programs.
  depends_on "catch2" => :test
  depends_on "curl"
  depends_on "libuv"
  depends_on "nlohmann-json"
  depends_on "spdlog"
  depends_on "sqlite"

  def install
    system "cmake", "-S", ".", "-B", "build", "-DSOAKD_BUILD_TESTS=OFF", *std_cmake_args
    system "cmake", "--build", "build"
    bin.install "build/daemon/soakd", "build/soakctl/soakctl"
    pkgshare.install "examples"
    pkgshare.install "launchd"
  end

  def caveats
    <<~EOS
      soakd reads ~/Library/Application Support/soakd/soakd.json. Start from
        #{opt_pkgshare}/examples/soakd.example.json
      check it with `soakd check-config FILE`, then `brew services start soakd`.
      Logs: ~/Library/Logs/soakd/. Fleets: #{opt_pkgshare}/examples/fleet/.
    EOS
  end

  # What launchd/org.soakd.soakd.agent.plist.in says, in Homebrew's words:
  # restart after a crash but not after a clean exit, at most every 30 s, and
  # ProcessType Interactive (launchd throttles a job without one like a
  # background job, which would distort the latency soakd measures).
  service do
    run [opt_bin/"soakd", "run", "--config", "~/Library/Application Support/soakd/soakd.json"]
    keep_alive successful_exit: false
    throttle_interval 30
    process_type :interactive
    working_dir "~/Library/Application Support/soakd"
    log_path "~/Library/Logs/soakd/launchd.out.log"
    error_log_path "~/Library/Logs/soakd/launchd.err.log"
    environment_variables PATH: "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
  end

  test do
    (testpath/"soakd.json").write <<~EOS
      {"store": "#{testpath}/soakd.db", "candidates": [
        {"name": "llama", "model": "m", "runtime": "llama.cpp", "base_url": "http://127.0.0.1:8080"}]}
    EOS
    system bin/"soakd", "check-config", testpath/"soakd.json"
    assert_match "soakctl", shell_output("#{bin}/soakctl --help")
  end
end
