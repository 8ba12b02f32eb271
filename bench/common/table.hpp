#pragma once
// A table of results, rendered as aligned text for the terminal, as Markdown
// for the docs and as CSV for scripts.

#include <string>
#include <vector>

namespace leasehold::bench {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}

  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  std::string text() const;
  std::string markdown() const;
  std::string csv() const;
  /// Writes csv() to `path`; throws std::runtime_error when it cannot.
  void write_csv(const std::string& path) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

/// `value` with `decimals` digits after the point.
std::string fixed(double value, int decimals = 2);

}  // namespace leasehold::bench
