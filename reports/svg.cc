#include "reports/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "reports/html.h"

namespace soak::report {

double Scale::operator()(double v) const {
  double a = d0, b = d1;
  if (kind == Kind::Log) {
    const double floor = std::max(d0, 1e-12);
    a = std::log10(floor);
    b = std::log10(std::max(d1, floor * 10));
    v = std::log10(std::max(v, floor));
  }
  if (b == a) return (r0 + r1) / 2;
  return r0 + (v - a) / (b - a) * (r1 - r0);
}

namespace {

double tick_step(double lo, double hi, int target) {
  const double span = hi - lo;
  if (!(span > 0) || target < 1) return 1;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> out;
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo) return out;
  if (hi == lo) return {lo};
  const double step = tick_step(lo, hi, target);
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9 && out.size() < 50; t += step)
    out.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  return out;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> out;
  if (!(lo > 0) || !(hi >= lo)) return out;
  for (double mag = std::pow(10.0, std::floor(std::log10(lo))); mag <= hi && out.size() < 40; mag *= 10)
    for (double m : {1.0, 2.0, 5.0})
      if (m * mag >= lo * (1 - 1e-9) && m * mag <= hi * (1 + 1e-9)) out.push_back(m * mag);
  if (out.size() > 12) {  // many decades: keep the powers of ten
    std::vector<double> tens;
    for (double t : out)
      if (std::fabs(std::log10(t) - std::round(std::log10(t))) < 1e-9) tens.push_back(t);
    out = tens;
  }
  return out;
}

std::pair<double, double> nice_range(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1};
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.05;
    lo -= pad;
    hi += pad;
  }
  const double step = tick_step(lo, hi, target);
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step};
}

std::string coord(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

Svg::Svg(double width, double height, std::string_view id, std::string_view cls, std::string_view label)
    : w_(width), h_(height) {
  head_ = "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" + escape(id) + "\" class=\"" + escape(cls) + "\" width=\"" +
          coord(width) + "\" height=\"" + coord(height) + "\" viewBox=\"0 0 " + coord(width) + " " + coord(height) +
          "\" role=\"img\" aria-label=\"" + escape(label) + "\">";
}

void Svg::shape_end(std::string_view element, std::string_view tooltip) {
  if (tooltip.empty())
    body_ += "/>";
  else
    body_ += "><title>" + escape(tooltip) + "</title></" + std::string(element) + ">";
}

void Svg::rect(double x, double y, double w, double h, std::string_view cls, std::string_view tooltip) {
  if (w < 0) {
    x += w;
    w = -w;
  }
  if (h < 0) {
    y += h;
    h = -h;
  }
  body_ += "<rect x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" width=\"" + coord(w) + "\" height=\"" + coord(h) +
           "\" class=\"" + escape(cls) + "\"";
  shape_end("rect", tooltip);
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view cls) {
  body_ += "<line x1=\"" + coord(x1) + "\" y1=\"" + coord(y1) + "\" x2=\"" + coord(x2) + "\" y2=\"" + coord(y2) +
           "\" class=\"" + escape(cls) + "\"/>";
}

namespace {
std::string point_list(const Points& pts) {
  std::string s;
  s.reserve(pts.size() * 12);
  for (const auto& [x, y] : pts) {
    if (!s.empty()) s += ' ';
    s += coord(x) + "," + coord(y);
  }
  return s;
}
}  // namespace

void Svg::polyline(const Points& pts, std::string_view cls) {
  if (pts.empty()) return;
  body_ += "<polyline points=\"" + point_list(pts) + "\" class=\"" + escape(cls) + "\"/>";
}

void Svg::polygon(const Points& pts, std::string_view cls, std::string_view tooltip) {
  if (pts.empty()) return;
  body_ += "<polygon points=\"" + point_list(pts) + "\" class=\"" + escape(cls) + "\"";
  shape_end("polygon", tooltip);
}

void Svg::circle(double x, double y, double r, std::string_view cls, std::string_view tooltip) {
  body_ +=
      "<circle cx=\"" + coord(x) + "\" cy=\"" + coord(y) + "\" r=\"" + coord(r) + "\" class=\"" + escape(cls) + "\"";
  shape_end("circle", tooltip);
}

void Svg::text(double x, double y, std::string_view s, std::string_view cls, Anchor anchor) {
  const char* a = anchor == Anchor::Start ? "start" : anchor == Anchor::Middle ? "middle" : "end";
  body_ += "<text x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" class=\"" + escape(cls) + "\" text-anchor=\"" + a +
           "\">" + escape(s) + "</text>";
}

void Svg::begin_link(std::string_view href) { body_ += "<a href=\"" + escape(href) + "\">"; }
void Svg::end_link() { body_ += "</a>"; }
void Svg::begin_group(std::string_view cls) { body_ += "<g class=\"" + escape(cls) + "\">"; }
void Svg::end_group() { body_ += "</g>"; }

std::string Svg::str() const { return head_ + body_ + "</svg>"; }

}  // namespace soak::report
