#include "chaos/checker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace leasehold::chaos {

namespace {

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

bool to_int(std::string_view s, std::int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

// Builds claims and checks event order for one process, one record at a time.
class RunParser {
 public:
  explicit RunParser(RunLog& run) : run_(run) {}

  void line(std::size_t number, std::string_view text) {
    number_ = number;
    const auto f = fields(text);
    if (f.empty()) return;
    const std::string_view verb = f[0];
    std::int64_t a = 0, b = 0, c = 0, d = 0;
    if (verb == "audit" && f.size() == 7 && to_int(f[3], a) && to_int(f[4], b) && to_int(f[5], c) &&
        to_int(f[6], d)) {
      audit(f[1], std::string(f[2]), a, b, d);
    } else if (verb == "elected" && f.size() == 4 && to_int(f[2], a) && to_int(f[3], b)) {
      ++run_.elected;
      elected(std::string(f[1]), a);
      run_.terms[std::string(f[1])].push_back(Term{a, b});
    } else if (verb == "revoked" && f.size() == 5 && to_int(f[2], a) && to_int(f[4], b)) {
      ++run_.revoked;
      revoked(std::string(f[1]), a);
    } else if (verb == "error" && f.size() >= 4 && to_int(f[2], a) && to_int(f[3], b)) {
      ++run_.errors;
    } else if ((verb == "step_down" || verb == "join") && f.size() == 3 && to_int(f[2], a)) {
    } else if (verb == "ready" && f.size() == 2 && to_int(f[1], a)) {
      run_.ready = a;
    } else if (verb == "stopped" && f.size() == 2 && to_int(f[1], a)) {
      run_.stopped = a;
    } else {
      problem(fmt::format("malformed record \"{}\"", text));
    }
  }

  void finish() {
    // Still claiming when the output ended: the process was killed (or hung),
    // so it claims until its last deadline.
    for (auto& [group, open] : open_) {
      if (open) close(group, *open, open->deadline, true);
    }
  }

 private:
  struct Open {
    Nanos begin;
    Nanos deadline;
    std::int64_t token;
  };

  void audit(std::string_view kind, const std::string& group, std::int64_t token, Nanos at, Nanos deadline) {
    auto& open = open_[group];
    if (kind == "began") {
      if (open) {
        problem(fmt::format("group {}: began while already claiming", group));
        close(group, *open, std::min(open->deadline, at), false);
      }
      open = Open{at, deadline, token};
    } else if (kind == "extended") {
      if (!open) {
        problem(fmt::format("group {}: extended without a claim", group));
        open = Open{at, deadline, token};
      } else if (at > open->deadline) {
        // The renewal was confirmed after the old deadline: is_leader() was
        // false in between, so the claim resumes only now.
        close(group, *open, open->deadline, false);
        open = Open{at, deadline, token};
      } else {
        open->deadline = deadline;
      }
    } else if (kind == "ended") {
      if (!open) {
        problem(fmt::format("group {}: ended without a claim", group));
        return;
      }
      close(group, *open, std::min(open->deadline, at), false);
      open.reset();
    } else {
      problem(fmt::format("group {}: unknown audit kind {}", group, kind));
    }
  }

  void close(const std::string& group, const Open& open, Nanos end, bool at_exit) {
    if (end > open.begin) run_.claims[group].push_back(Claim{open.begin, end, open.token, at_exit});
  }

  // elected and revoked alternate per group, starting with elected, and a
  // revoked names the token of the term it ends.
  void elected(const std::string& group, std::int64_t token) {
    auto& term = term_[group];
    if (term) problem(fmt::format("group {}: elected (token {}) while term {} is running", group, token, *term));
    term = token;
  }

  void revoked(const std::string& group, std::int64_t token) {
    auto& term = term_[group];
    if (!term) {
      problem(fmt::format("group {}: revoked (token {}) without elected", group, token));
    } else if (*term != token) {
      problem(fmt::format("group {}: revoked token {} but the term began with token {}", group, token, *term));
    }
    term.reset();
  }

  void problem(std::string what) {
    run_.problems.push_back(fmt::format("{}:{}: {}", run_.source, number_, what));
  }

  RunLog& run_;
  std::size_t number_ = 0;
  std::map<std::string, std::optional<Open>> open_;
  std::map<std::string, std::optional<std::int64_t>> term_;
};

struct Tagged {
  const Claim* claim;
  const RunLog* run;
};

std::string who(const RunLog& run) { return fmt::format("{} ({})", run.instance, run.source); }

Nanos alive_until(const Claim& c, const RunLog& run) {
  return run.dead_at ? std::min(c.end, *run.dead_at) : c.end;
}

}  // namespace

RunLog parse_run(std::string_view text, std::string instance, std::string source) {
  RunLog run;
  run.instance = std::move(instance);
  run.source = source.empty() ? run.instance : std::move(source);
  RunParser parser(run);
  std::size_t number = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    parser.line(++number, text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  parser.finish();
  return run;
}

RunLog load_run(const std::string& path, std::string instance) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read member output " + path);
  std::ostringstream text;
  text << in.rdbuf();
  const auto slash = path.find_last_of('/');
  return parse_run(text.str(), std::move(instance), slash == std::string::npos ? path : path.substr(slash + 1));
}

std::vector<Overlap> find_overlaps(const std::vector<RunLog>& runs) {
  std::map<std::string, std::vector<Tagged>> by_group;
  for (const auto& run : runs) {
    for (const auto& [group, claims] : run.claims) {
      for (const auto& c : claims) by_group[group].push_back(Tagged{&c, &run});
    }
  }
  std::vector<Overlap> out;
  for (auto& [group, claims] : by_group) {
    std::sort(claims.begin(), claims.end(),
              [](const Tagged& x, const Tagged& y) { return x.claim->begin < y.claim->begin; });
    std::vector<Tagged> active;  // claims that began earlier and may still run
    for (const Tagged& next : claims) {
      const Nanos now = next.claim->begin;
      std::erase_if(active, [now](const Tagged& t) { return t.claim->end <= now; });
      for (const Tagged& earlier : active) {
        if (earlier.run == next.run) continue;
        Nanos end = std::min(earlier.claim->end, next.claim->end);
        if (earlier.run->instance == next.run->instance) {
          // The same lease value: only a problem while both processes lived.
          end = std::min(alive_until(*earlier.claim, *earlier.run), alive_until(*next.claim, *next.run));
        }
        if (end > now) out.push_back(Overlap{group, who(*earlier.run), who(*next.run), now, end - now});
      }
      active.push_back(next);
    }
  }
  return out;
}

std::vector<TokenRegression> find_token_regressions(const std::vector<RunLog>& runs,
                                                    std::vector<Nanos> data_losses) {
  struct Began {
    const Term* term;
    const RunLog* run;
  };
  std::map<std::string, std::vector<Began>> by_group;
  for (const auto& run : runs) {
    for (const auto& [group, terms] : run.terms) {
      for (const auto& t : terms) by_group[group].push_back(Began{&t, &run});
    }
  }
  std::sort(data_losses.begin(), data_losses.end());
  std::vector<TokenRegression> out;
  for (auto& [group, terms] : by_group) {
    std::stable_sort(terms.begin(), terms.end(),
                     [](const Began& x, const Began& y) { return x.term->at < y.term->at; });
    std::optional<Began> greatest;
    auto loss = data_losses.begin();
    for (const Began& next : terms) {
      for (; loss != data_losses.end() && *loss <= next.term->at; ++loss) greatest.reset();
      if (greatest) {
        const std::int64_t top = greatest->term->token;
        const bool reclaim = next.term->token == top && next.run->instance == greatest->run->instance;
        if (next.term->token <= top && !reclaim) {
          out.push_back(TokenRegression{group, who(*greatest->run), who(*next.run), top, next.term->token,
                                        next.term->at});
        }
      }
      if (!greatest || next.term->token > greatest->term->token) greatest = next;
    }
  }
  return out;
}

std::map<std::string, std::vector<Gap>> leaderless_gaps(const std::vector<RunLog>& runs,
                                                        const std::vector<std::string>& groups, Nanos from,
                                                        Nanos to) {
  std::map<std::string, std::vector<Gap>> out;
  for (const auto& group : groups) {
    std::vector<Gap> covered;
    for (const auto& run : runs) {
      auto it = run.claims.find(group);
      if (it == run.claims.end()) continue;
      for (const auto& c : it->second) {
        const Nanos end = alive_until(c, run);
        if (end > c.begin) covered.push_back(Gap{c.begin, end});
      }
    }
    std::sort(covered.begin(), covered.end(), [](const Gap& x, const Gap& y) { return x.begin < y.begin; });
    auto& gaps = out[group];
    Nanos cursor = from;  // everything before it is claimed (or outside the window)
    for (const auto& c : covered) {
      if (cursor >= to) break;
      if (c.begin > cursor) gaps.push_back(Gap{cursor, std::min(c.begin, to)});
      cursor = std::max(cursor, c.end);
    }
    if (cursor < to) gaps.push_back(Gap{cursor, to});
  }
  return out;
}

bool Liveness::ok() const {
  return unexplained.empty() &&
         std::all_of(recoveries.begin(), recoveries.end(), [](const Recovery& r) { return r.ok; });
}

Liveness check_liveness(const std::map<std::string, std::vector<Gap>>& gaps,
                        const std::vector<Disruption>& disruptions, Nanos tolerance) {
  Liveness out;
  out.recoveries.resize(disruptions.size());
  for (std::size_t i = 0; i < disruptions.size(); ++i) out.recoveries[i].disruption = i;
  for (const auto& [group, list] : gaps) {
    for (const Gap& gap : list) {
      bool explained = false;
      for (std::size_t i = 0; i < disruptions.size(); ++i) {
        const Disruption& d = disruptions[i];
        if (gap.begin < d.start || gap.begin > d.deadline()) continue;
        explained = true;
        Recovery& r = out.recoveries[i];
        if (gap.end - d.reference > r.time_to_leader) {
          r.time_to_leader = gap.end - d.reference;
          r.worst_group = group;
        }
        r.longest_gap = std::max(r.longest_gap, gap.length());
        if (gap.end > d.deadline()) r.ok = false;
      }
      if (!explained && gap.length() > tolerance) out.unexplained.emplace_back(group, gap);
    }
  }
  return out;
}

std::string format_ms(Nanos ns) { return fmt::format("{:.1f}", static_cast<double>(ns) / 1e6); }

}  // namespace leasehold::chaos
