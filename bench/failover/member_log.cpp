#include "failover/member_log.hpp"

#include <fstream>
#include <sstream>

namespace leasehold::bench {

MemberEvent parse_member_line(const std::string& line) {
  using Kind = MemberEvent::Kind;
  std::istringstream in(line);
  std::string word;
  in >> word;
  MemberEvent e;
  if (word == "ready" || word == "stopped") {
    e.kind = word == "ready" ? Kind::ready : Kind::stopped;
    in >> e.at;
  } else if (word == "elected") {
    e.kind = Kind::elected;
    in >> e.group >> e.token >> e.at;
  } else if (word == "revoked") {
    e.kind = Kind::revoked;
    in >> e.group >> e.token >> e.detail >> e.at;
  } else if (word == "step_down" || word == "join") {
    e.kind = word == "join" ? Kind::join : Kind::step_down;
    in >> e.group >> e.at;
  } else if (word == "audit") {
    std::string kind;
    in >> kind >> e.group >> e.token >> e.at >> e.sent_at >> e.deadline;
    e.kind = kind == "began" ? Kind::began : kind == "extended" ? Kind::extended : Kind::ended;
  } else if (word == "background_led") {
    e.kind = Kind::background_led;
    in >> e.at;
  } else if (word == "background_revoked") {
    e.kind = Kind::background_revoked;
    in >> e.group >> e.detail >> e.at;
  } else if (word == "log") {
    e.kind = Kind::log;
    in >> e.at;
    std::getline(in, e.detail);
  } else if (word == "error") {
    e.kind = Kind::error;
    std::int64_t code = 0;
    in >> e.group >> code >> e.at;
    std::getline(in, e.detail);
  }
  if (in.fail() && e.kind != Kind::error && e.kind != Kind::log) e.kind = Kind::other;
  return e;
}

void MemberLog::poll() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  offset_ += chunk.size();
  partial_ += chunk;
  std::size_t start = 0;
  for (std::size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    MemberEvent e = parse_member_line(partial_.substr(start, nl - start));
    if (e.kind != MemberEvent::Kind::other) events_.push_back(std::move(e));
  }
  partial_.erase(0, start);
}

}  // namespace leasehold::bench
