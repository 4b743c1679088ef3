// Inline SVG for reports: a small writer (shapes, text, tooltips, links) with
// coordinates rounded to 0.1 px so a week of data stays small, linear and log
// scales, and "nice" axis ticks. Styling is by class (the page's stylesheet,
// reports/page.cc), so the charts carry no colours of their own. Every text
// that goes in is escaped here. Pure; thread-agnostic.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace soak::report {

// Maps a domain [d0, d1] onto a range [r0, r1]; Log maps log10 of the value
// (values <= 0 are clamped to the domain's low end).
struct Scale {
  enum class Kind { Linear, Log };
  double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
  Kind kind = Kind::Linear;
  double operator()(double v) const;
};

// Ticks at 1, 2 or 5 x 10^k covering [lo, hi], about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target);
// For a log scale: 1, 2, 5 x 10^k inside [lo, hi] (at most ~12).
std::vector<double> log_ticks(double lo, double hi);
// [lo, hi] widened to the nearest ticks, so data never touches the frame; a
// degenerate range (lo == hi) is opened around its value.
std::pair<double, double> nice_range(double lo, double hi, int target);

using Points = std::vector<std::pair<double, double>>;

class Svg {
 public:
  // `id` and `cls` go on the <svg> element; `label` is its accessible name.
  Svg(double width, double height, std::string_view id, std::string_view cls, std::string_view label);

  void rect(double x, double y, double w, double h, std::string_view cls, std::string_view tooltip = {});
  void line(double x1, double y1, double x2, double y2, std::string_view cls);
  void polyline(const Points& pts, std::string_view cls);
  void polygon(const Points& pts, std::string_view cls, std::string_view tooltip = {});
  void circle(double x, double y, double r, std::string_view cls, std::string_view tooltip = {});
  enum class Anchor { Start, Middle, End };
  void text(double x, double y, std::string_view s, std::string_view cls, Anchor anchor = Anchor::Start);
  // Everything between begin_link and end_link links to `href` (escaped).
  void begin_link(std::string_view href);
  void end_link();
  void begin_group(std::string_view cls);
  void end_group();

  double width() const { return w_; }
  double height() const { return h_; }
  std::string str() const;

 private:
  void shape_end(std::string_view element, std::string_view tooltip);
  double w_, h_;
  std::string head_, body_;
};

// Coordinates as written: one decimal, no trailing ".0".
std::string coord(double v);

}  // namespace soak::report
