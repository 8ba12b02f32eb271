#pragma once
// A strict parser of the Prometheus text exposition format (0.0.4) for tests:
// it rejects anything a scraper could misread. Stricter than Prometheus in two
// ways that leasehold's output must meet anyway: every family needs HELP and
// TYPE lines, and blank lines or free comments are errors. Header-only, so
// that unit tests can use it without the harness library.

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold::test::prometheus {

using Labels = std::map<std::string, std::string>;

struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

struct Family {
  std::string name;
  std::string type;  ///< counter, gauge, histogram, summary or untyped
  std::string help;
  std::vector<Sample> samples;
};

struct Exposition {
  std::vector<Family> families;

  const Family* family(std::string_view name) const {
    for (const auto& f : families) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
  /// The value of the sample `name` whose labels include every pair of
  /// `subset`; nullopt when there is none, throws when several match.
  std::optional<double> value(std::string_view name, const Labels& subset = {}) const {
    std::optional<double> found;
    for (const auto& f : families) {
      for (const auto& s : f.samples) {
        if (s.name != name) continue;
        bool match = true;
        for (const auto& [k, v] : subset) {
          auto it = s.labels.find(k);
          if (it == s.labels.end() || it->second != v) match = false;
        }
        if (!match) continue;
        if (found) throw std::runtime_error("several samples match " + std::string(name));
        found = s.value;
      }
    }
    return found;
  }
};

namespace detail {

[[noreturn]] inline void fail(std::size_t line, const std::string& what) {
  throw std::runtime_error("exposition line " + std::to_string(line) + ": " + what);
}

inline bool is_metric_name(std::string_view s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

inline bool is_label_name(std::string_view s) {
  return is_metric_name(s) && s.find(':') == std::string_view::npos;
}

inline std::optional<double> parse_value(std::string_view s) {
  if (s == "+Inf") return HUGE_VAL;
  if (s == "-Inf") return -HUGE_VAL;
  // Prometheus reads NaN in any case; prometheus-cpp's exposer writes "Nan"
  // (its own summaries before the first observation).
  if (s.size() == 3 && (s[0] | 0x20) == 'n' && (s[1] | 0x20) == 'a' && (s[2] | 0x20) == 'n') return NAN;
  if (s.empty()) return std::nullopt;
  const std::string copy(s);
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  // strtod accepts "inf", "nan" and hex; the format does not.
  for (const char c : copy) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) return std::nullopt;
  }
  return v;
}

// name{a="x",b="y"} value [timestamp]
inline Sample parse_sample(std::string_view line, std::size_t n) {
  Sample s;
  std::size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  s.name = std::string(line.substr(0, i));
  if (!is_metric_name(s.name)) fail(n, "bad metric name \"" + s.name + "\"");
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      if (i >= line.size()) fail(n, "unterminated label set");
      if (line[i] == '}') {
        ++i;
        break;
      }
      std::size_t eq = line.find('=', i);
      if (eq == std::string_view::npos) fail(n, "label without '='");
      const std::string key(line.substr(i, eq - i));
      if (!is_label_name(key)) fail(n, "bad label name \"" + key + "\"");
      i = eq + 1;
      if (i >= line.size() || line[i] != '"') fail(n, "label value must be quoted");
      ++i;
      std::string value;
      while (true) {
        if (i >= line.size()) fail(n, "unterminated label value");
        const char c = line[i++];
        if (c == '"') break;
        if (c == '\\') {
          if (i >= line.size()) fail(n, "dangling escape");
          const char e = line[i++];
          if (e == '\\') value += '\\';
          else if (e == '"') value += '"';
          else if (e == 'n') value += '\n';
          else fail(n, std::string("bad escape \\") + e);
        } else {
          value += c;
        }
      }
      if (!s.labels.emplace(key, value).second) fail(n, "duplicate label " + key);
      if (i < line.size() && line[i] == ',') ++i;
      else if (i >= line.size() || line[i] != '}') fail(n, "expected ',' or '}' after a label");
    }
  }
  if (i >= line.size() || line[i] != ' ') fail(n, "expected a space before the value");
  ++i;
  std::string_view rest = line.substr(i);
  std::string_view value_text = rest;
  if (const auto space = rest.find(' '); space != std::string_view::npos) {
    value_text = rest.substr(0, space);
    const std::string_view stamp = rest.substr(space + 1);
    if (stamp.empty()) fail(n, "trailing space");
    for (std::size_t k = 0; k < stamp.size(); ++k) {
      if (!((stamp[k] >= '0' && stamp[k] <= '9') || (k == 0 && stamp[k] == '-'))) fail(n, "bad timestamp");
    }
  }
  const auto v = parse_value(value_text);
  if (!v) fail(n, "bad value \"" + std::string(value_text) + "\"");
  s.value = *v;
  return s;
}

inline std::string series_key(const Sample& s, bool without_le) {
  std::string key = s.name.substr(0, without_le ? 0 : s.name.size());
  for (const auto& [k, v] : s.labels) {
    if (without_le && k == "le") continue;
    key += '\x1f' + k + '=' + v;
  }
  return key;
}

inline std::string strip_suffix(const std::string& name, const std::string& family) {
  return name.size() > family.size() ? name.substr(family.size()) : std::string();
}

// Buckets of each series ascend in le, are cumulative, end with +Inf, and
// the +Inf bucket equals _count; every series has _sum and _count.
inline void check_histogram(const Family& f) {
  struct Series {
    std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
    std::optional<double> sum, count;
  };
  std::map<std::string, Series> series;
  for (const auto& s : f.samples) {
    const std::string suffix = strip_suffix(s.name, f.name);
    Series& x = series[series_key(s, true)];
    if (suffix == "_bucket") {
      const auto le = s.labels.find("le");
      if (le == s.labels.end()) throw std::runtime_error(f.name + ": bucket without le");
      const auto bound = parse_value(le->second);
      if (!bound) throw std::runtime_error(f.name + ": bad le \"" + le->second + "\"");
      if (!x.buckets.empty() && !(*bound > x.buckets.back().first)) {
        throw std::runtime_error(f.name + ": le bounds not strictly ascending");
      }
      if (!x.buckets.empty() && s.value < x.buckets.back().second) {
        throw std::runtime_error(f.name + ": bucket counts are not cumulative");
      }
      x.buckets.emplace_back(*bound, s.value);
    } else {
      if (s.labels.count("le") != 0) throw std::runtime_error(f.name + ": le on " + s.name);
      (suffix == "_sum" ? x.sum : x.count) = s.value;
    }
  }
  for (const auto& [key, x] : series) {
    if (x.buckets.empty() || !std::isinf(x.buckets.back().first)) {
      throw std::runtime_error(f.name + ": buckets do not end with le=\"+Inf\"");
    }
    if (!x.sum || !x.count) throw std::runtime_error(f.name + ": series without _sum or _count");
    if (x.buckets.back().second != *x.count) throw std::runtime_error(f.name + ": +Inf bucket differs from _count");
  }
}

}  // namespace detail

/// Parses `text`; throws std::runtime_error naming the line and the rule
/// broken.
inline Exposition parse(std::string_view text) {
  using detail::fail;
  Exposition out;
  std::set<std::string> declared;  // families with a TYPE line
  std::set<std::string> helped;    // families with a HELP line
  std::set<std::string> series;
  if (text.empty()) throw std::runtime_error("empty exposition");
  if (text.back() != '\n') throw std::runtime_error("exposition does not end with a line feed");
  std::size_t n = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t eol = text.find('\n', pos);
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++n;
    if (line.empty()) fail(n, "blank line");
    if (line.front() == '#') {
      const bool help = line.starts_with("# HELP ");
      const bool type = line.starts_with("# TYPE ");
      if (!help && !type) fail(n, "comment that is neither HELP nor TYPE");
      const std::string_view rest = line.substr(7);
      const std::size_t space = rest.find(' ');
      if (space == std::string_view::npos) fail(n, "HELP or TYPE without text");
      const std::string name(rest.substr(0, space));
      const std::string_view tail = rest.substr(space + 1);
      if (!detail::is_metric_name(name)) fail(n, "bad family name \"" + name + "\"");
      if (help) {
        if (!helped.insert(name).second) fail(n, "second HELP for " + name);
        if (declared.count(name) != 0) fail(n, "HELP after TYPE for " + name);
        if (tail.empty()) fail(n, "empty HELP for " + name);
        out.families.push_back(Family{name, "", std::string(tail), {}});
      } else {
        if (!declared.insert(name).second) fail(n, "second TYPE for " + name);
        if (tail != "counter" && tail != "gauge" && tail != "histogram" && tail != "summary" && tail != "untyped") {
          fail(n, "unknown type \"" + std::string(tail) + "\"");
        }
        if (out.families.empty() || out.families.back().name != name || !out.families.back().type.empty()) {
          fail(n, "TYPE for " + name + " does not follow its HELP");
        }
        out.families.back().type = std::string(tail);
      }
      continue;
    }
    Sample s = detail::parse_sample(line, n);
    if (out.families.empty() || out.families.back().type.empty()) fail(n, "sample before any TYPE: " + s.name);
    Family& f = out.families.back();
    bool belongs = s.name == f.name;
    if (f.type == "histogram") {
      belongs = s.name == f.name + "_bucket" || s.name == f.name + "_sum" || s.name == f.name + "_count";
    } else if (f.type == "summary") {
      belongs = belongs || s.name == f.name + "_sum" || s.name == f.name + "_count";
    }
    if (!belongs) fail(n, "sample " + s.name + " is not of the family declared above it (" + f.name + ")");
    if (s.labels.count("le") != 0 && f.type != "histogram") fail(n, "le label outside a histogram");
    if (f.type == "counter" && !(s.value >= 0)) fail(n, "negative or NaN counter " + s.name);
    if (!series.insert(detail::series_key(s, false)).second) fail(n, "duplicate series " + s.name);
    f.samples.push_back(std::move(s));
  }
  for (const auto& f : out.families) {
    if (f.type.empty()) throw std::runtime_error("family " + f.name + " has HELP but no TYPE");
    if (f.type == "histogram") detail::check_histogram(f);
  }
  return out;
}

}  // namespace leasehold::test::prometheus
