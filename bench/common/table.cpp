#include "common/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace leasehold::bench {

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string Table::text() const {
  std::vector<std::size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      // First column left-aligned (names), the rest right-aligned (numbers).
      out += i == 0 ? fmt::format("{:<{}}", cell, width[i]) : fmt::format("  {:>{}}", cell, width[i]);
    }
    out += '\n';
  };
  line(header_);
  std::size_t total = 0;
  for (const auto w : width) total += w + 2;
  out += std::string(total - 2, '-') + '\n';
  for (const auto& r : rows_) line(r);
  return out;
}

std::string Table::markdown() const {
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    out += '|';
    for (std::size_t i = 0; i < header_.size(); ++i) out += ' ' + (i < row.size() ? row[i] : "") + " |";
    out += '\n';
  };
  line(header_);
  out += '|';
  for (std::size_t i = 0; i < header_.size(); ++i) out += i == 0 ? " --- |" : " ---: |";
  out += '\n';
  for (const auto& r : rows_) line(r);
  return out;
}

std::string Table::csv() const {
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i != 0) out += ',';
      out += csv_field(row[i]);
    }
    out += '\n';
  };
  line(header_);
  for (const auto& r : rows_) line(r);
  return out;
}

void Table::write_csv(const std::string& path) const {
  std::ofstream f(path);
  f << csv();
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string fixed(double value, int decimals) { return fmt::format("{:.{}f}", value, decimals); }

}  // namespace leasehold::bench
