#pragma once
// A latency histogram with fixed buckets. Recording is a short scan and three
// additions with no allocation and no lock, so it can sit on the reply path of
// every Redis command. Not thread-safe: record and read on one executor (the
// elector copies it on its strand for Elector::metrics()).

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace leasehold {

/// Counts latency samples in fixed buckets, with their sum and count, in the
/// shape a Prometheus histogram exports. A value type; starts empty.
class LatencyHistogram {
 public:
  /// Inclusive upper bounds of the buckets (Prometheus "le"): a 1-2.5-5 log
  /// scale from 100 µs to 10 s. Samples above the last bound fall into one
  /// more bucket, +Inf. Fixed, so that histograms of every instance of a fleet
  /// can be summed.
  static constexpr std::array<std::chrono::nanoseconds, 16> bounds{
      std::chrono::microseconds{100}, std::chrono::microseconds{250}, std::chrono::microseconds{500},
      std::chrono::milliseconds{1},   std::chrono::microseconds{2500}, std::chrono::milliseconds{5},
      std::chrono::milliseconds{10},  std::chrono::milliseconds{25},   std::chrono::milliseconds{50},
      std::chrono::milliseconds{100}, std::chrono::milliseconds{250},  std::chrono::milliseconds{500},
      std::chrono::seconds{1},        std::chrono::milliseconds{2500}, std::chrono::seconds{5},
      std::chrono::seconds{10}};
  /// bounds.size() finite buckets plus +Inf.
  static constexpr std::size_t bucket_count = bounds.size() + 1;

  /// Adds one sample: its bucket, the sum and the count.
  void record(std::chrono::nanoseconds sample) noexcept {
    std::size_t i = 0;
    while (i < bounds.size() && sample > bounds[i]) ++i;
    ++buckets_[i];
    sum_ += sample;
    ++count_;
  }

  /// Adds every sample of `other` (the connections of a cluster summed into
  /// one histogram; the buckets are the same for every histogram).
  void merge(const LatencyHistogram& other) noexcept {
    for (std::size_t i = 0; i < bucket_count; ++i) buckets_[i] += other.buckets_[i];
    sum_ += other.sum_;
    count_ += other.count_;
  }

  /// Number of samples recorded.
  std::uint64_t count() const noexcept { return count_; }
  /// Sum of every sample recorded (mean = sum() / count()).
  std::chrono::nanoseconds sum() const noexcept { return sum_; }
  /// Samples in bucket `i` alone: above bounds[i-1] and at most bounds[i];
  /// i == bounds.size() is the +Inf bucket.
  std::uint64_t bucket(std::size_t i) const noexcept { return i < bucket_count ? buckets_[i] : 0; }
  /// Samples at most bounds[i] (cumulative, as Prometheus exposes them);
  /// i == bounds.size() gives count().
  std::uint64_t cumulative(std::size_t i) const noexcept {
    std::uint64_t total = 0;
    for (std::size_t j = 0; j <= i && j < bucket_count; ++j) total += buckets_[j];
    return total;
  }

 private:
  std::array<std::uint64_t, bucket_count> buckets_{};
  std::chrono::nanoseconds sum_{0};
  std::uint64_t count_ = 0;
};

}  // namespace leasehold
