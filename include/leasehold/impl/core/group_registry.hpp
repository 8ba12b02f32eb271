#pragma once
// Name -> group lookup that readers on any thread can use without a lock or
// an allocation (is_leader by name), while registrations, which are rare,
// take a mutex. Groups are never removed; a table that fills up is replaced by
// a larger one and the old one is kept until the registry dies, so a reader
// that still holds it stays safe.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace leasehold::detail {

template <typename T>  // T has a `name` member convertible to std::string_view
class GroupRegistry {
 public:
  GroupRegistry() { publish(make_table(16)); }

  T* find(std::string_view name) const noexcept {
    const Table* table = current_.load(std::memory_order_acquire);
    const std::size_t mask = table->size - 1;
    for (std::size_t i = std::hash<std::string_view>{}(name) & mask;; i = (i + 1) & mask) {
      T* entry = table->slots[i].load(std::memory_order_acquire);
      if (entry == nullptr) return nullptr;
      if (std::string_view(entry->name) == name) return entry;
    }
  }

  /// Makes room for `count` groups at once: one table instead of a series of
  /// ever larger ones, all of which would be kept.
  void reserve(std::size_t count) {
    std::lock_guard lock(mutex_);
    owned_.reserve(count);
    std::size_t size = tables_.back()->size;
    while (count * 2 > size) size *= 2;
    if (size == tables_.back()->size) return;
    auto bigger = make_table(size);
    for (const auto& e : owned_) place(*bigger, e.get());
    publish(std::move(bigger));
  }

  /// Adds `entry` unless a group of that name exists. Returns the registered
  /// group and whether it is the new one.
  std::pair<T*, bool> insert(std::unique_ptr<T> entry) {
    std::lock_guard lock(mutex_);
    if (T* existing = find(entry->name)) return {existing, false};
    if ((owned_.size() + 1) * 2 > tables_.back()->size) {
      auto bigger = make_table(tables_.back()->size * 2);
      for (const auto& e : owned_) place(*bigger, e.get());
      publish(std::move(bigger));
    }
    T* raw = entry.get();
    owned_.push_back(std::move(entry));
    place(*tables_.back(), raw);
    return {raw, true};
  }

  /// Every group, in registration order. Callers hold no lock while using
  /// the pointers: groups live as long as the registry.
  std::vector<T*> snapshot() const {
    std::lock_guard lock(mutex_);
    std::vector<T*> out;
    out.reserve(owned_.size());
    for (const auto& e : owned_) out.push_back(e.get());
    return out;
  }

 private:
  struct Table {
    std::size_t size;
    std::unique_ptr<std::atomic<T*>[]> slots;
  };

  static std::unique_ptr<Table> make_table(std::size_t size) {
    auto table = std::make_unique<Table>(Table{size, std::make_unique<std::atomic<T*>[]>(size)});
    for (std::size_t i = 0; i < size; ++i) table->slots[i].store(nullptr, std::memory_order_relaxed);
    return table;
  }

  static void place(Table& table, T* entry) {
    const std::size_t mask = table.size - 1;
    std::size_t i = std::hash<std::string_view>{}(std::string_view(entry->name)) & mask;
    while (table.slots[i].load(std::memory_order_relaxed) != nullptr) i = (i + 1) & mask;
    table.slots[i].store(entry, std::memory_order_release);
  }

  void publish(std::unique_ptr<Table> table) {
    current_.store(table.get(), std::memory_order_release);
    tables_.push_back(std::move(table));
  }

  mutable std::mutex mutex_;
  std::atomic<const Table*> current_{nullptr};
  std::vector<std::unique_ptr<Table>> tables_;  // every table ever published
  std::vector<std::unique_ptr<T>> owned_;
};

}  // namespace leasehold::detail
