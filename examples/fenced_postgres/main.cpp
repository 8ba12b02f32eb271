// fenced_postgres: a leader's writes to PostgreSQL, fenced with its term's
// token, so that a leader that lost its lease without knowing it (a long GC
// pause, a frozen VM) cannot overwrite the work of the leader after it.
//
// Every instance campaigns for the group "ledger". While it leads, it appends
// a row to the table `ledger` every 200 ms, with the fencing token of its
// term. The database checks the token against the table `fence`, which holds
// the highest token seen so far, in the same statement as the insert: a
// token lower than that is rejected, and nothing is written.
//
// Output, one line per event:
//   ready instance=..                         elected instance=.. token=..
//   wrote instance=.. token=.. seq=.. row=..  term_ended instance=.. token=..
//   rejected instance=.. token=.. seq=.. fence=.. (stale token N < M)
//   error instance=.. token=.. seq=.. detail=".."
//   stall instance=.. token=.. seq=..         stopped instance=..
// SIGINT or SIGTERM stop gracefully (the lease is released). SIGUSR1 is for
// demonstrations: the next write freezes the whole process (SIGSTOP) after it
// checked leadership and took the token, as a stop-the-world pause would;
// SIGCONT resumes it, and the write goes out with the token of a term that
// may have ended meanwhile.
//
//   fenced_postgres --url redis://127.0.0.1:6379 --pg "host=127.0.0.1 port=5432 dbname=app"
//                   [--id NAME] [--ttl-ms 2000]

#include <leasehold/leasehold.hpp>

#include <boost/asio/use_future.hpp>

#include <fmt/format.h>

#include <libpq-fe.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <future>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace lh = leasehold;
using namespace std::chrono_literals;

namespace {

// The tables. `fence` holds, per fenced resource, the highest token that has
// written to it; `ledger` is the data the leader writes. The advisory lock
// makes instances that start together create the tables one at a time
// (concurrent CREATE TABLE IF NOT EXISTS can fail on the catalog).
constexpr const char* schema_sql = R"sql(
BEGIN;
SET LOCAL client_min_messages = warning;  -- no "already exists, skipping" notices
SELECT pg_advisory_xact_lock(hashtext('fenced_postgres schema'));
CREATE TABLE IF NOT EXISTS fence (
  resource text PRIMARY KEY,
  token    bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger (
  id         bigserial PRIMARY KEY,
  token      bigint NOT NULL,
  instance   text NOT NULL,
  seq        bigint NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now()
);
COMMIT;
)sql";

// The fence starts below every token (leasehold's first token is 1).
constexpr const char* seed_sql = "INSERT INTO fence (resource, token) VALUES ($1, 0) ON CONFLICT DO NOTHING";

// The fenced write, one statement and therefore one transaction: the UPDATE
// raises the fence to $2 only if no higher token has been seen, and the
// INSERT takes its row from the UPDATE's result, so the ledger row exists
// exactly when the fence accepted the token. No row back: rejected.
//
// Race-free under concurrent writers: the UPDATE locks the fence row until
// the transaction ends, so writers of one resource go one at a time. A writer
// that had to wait for the lock re-checks `token <= $2` against the row as
// the previous writer committed it, not against its own older snapshot (READ
// COMMITTED; at REPEATABLE READ or SERIALIZABLE it fails with a serialization
// error instead, which is just as safe). So once a token M has committed, no
// token below M can write, and the ledger's tokens never decrease in row
// order.
constexpr const char* fenced_write_sql = R"sql(
WITH accepted AS (
  UPDATE fence SET token = $2
  WHERE resource = $1 AND token <= $2
  RETURNING token
)
INSERT INTO ledger (token, instance, seq)
SELECT token, $3, $4 FROM accepted
RETURNING id
)sql";

volatile std::sig_atomic_t stop_requested = 0;
volatile std::sig_atomic_t stall_requested = 0;
extern "C" void request_stop(int) { stop_requested = 1; }
extern "C" void request_stall(int) { stall_requested = 1; }

// One write(2) per line: the lines of several processes never interleave.
void say(const std::string& line) {
  const std::string l = line + "\n";
  if (::write(STDOUT_FILENO, l.data(), l.size()) < 0) std::perror("fenced_postgres: write");
}

using Connection = std::unique_ptr<PGconn, decltype(&PQfinish)>;
using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

std::string message_of(const PGconn* conn) {
  std::string m = PQerrorMessage(conn);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

Connection connect(const std::string& conninfo) {
  Connection conn(PQconnectdb(conninfo.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) throw std::runtime_error("PostgreSQL: " + message_of(conn.get()));
  return conn;
}

// Runs a statement with text parameters; throws on an SQL error.
Result exec(PGconn* conn, const char* sql, std::initializer_list<std::string> params = {}) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  Result r(values.empty() ? PQexec(conn, sql)
                          : PQexecParams(conn, sql, static_cast<int>(values.size()), nullptr, values.data(),
                                         nullptr, nullptr, 0),
           &PQclear);
  const auto status = PQresultStatus(r.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) throw std::runtime_error(message_of(conn));
  return r;
}

// One fenced write; prints its outcome.
void write_row(PGconn* conn, const std::string& resource, const std::string& id, std::int64_t token, long seq) {
  const std::string token_text = std::to_string(token);
  try {
    Result r = exec(conn, fenced_write_sql, {resource, token_text, id, std::to_string(seq)});
    if (PQntuples(r.get()) == 1) {
      say(fmt::format("wrote instance={} token={} seq={} row={}", id, token, seq, PQgetvalue(r.get(), 0, 0)));
      return;
    }
    // Rejected. The fence read here is for the message only: the decision
    // was taken by the statement above.
    Result f = exec(conn, "SELECT token FROM fence WHERE resource = $1", {resource});
    const std::string fence = PQntuples(f.get()) == 1 ? PQgetvalue(f.get(), 0, 0) : "none";
    say(fmt::format("rejected instance={} token={} seq={} fence={} (stale token {} < {})", id, token, seq, fence,
                    token, fence));
  } catch (const std::exception& e) {
    // Not a rejection. If the connection broke, the write may or may not
    // have committed; the fence holds either way.
    say(fmt::format("error instance={} token={} seq={} detail=\"{}\"", id, token, seq, e.what()));
    if (PQstatus(conn) == CONNECTION_BAD) PQreset(conn);  // try again on the next write
  }
}

}  // namespace

int main(int argc, char** argv) try {
  std::string url;
  std::string conninfo;
  const std::string group = "ledger";  // the election group, and the fenced resource
  lh::ElectorOptions options;
  options.key_prefix = "fenced_postgres:leader:";  // this service's own leases
  options.ttl = 2000ms;
  options.retry_interval = 500ms;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--url") url = argv[i + 1];
    else if (flag == "--pg") conninfo = argv[i + 1];
    else if (flag == "--id") options.instance_id = argv[i + 1];
    else if (flag == "--ttl-ms") options.ttl = std::chrono::milliseconds(std::stoll(argv[i + 1]));
    else throw std::invalid_argument(fmt::format("unknown flag {}", flag));
  }
  if (url.empty() || conninfo.empty()) throw std::invalid_argument("--url and --pg are required");

  Connection db = connect(conninfo);
  exec(db.get(), schema_sql);
  exec(db.get(), seed_sql, {group});

  lh::Elector elector(lh::RedisOptions::from_url(url), options);  // standalone: owns its threads
  const std::string id = elector.instance_id();
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  std::signal(SIGUSR1, request_stall);
  elector.start();
  say(fmt::format("ready instance={}", id));

  long seq = 0;
  while (stop_requested == 0) {
    // Wait for a term (polling the future so that a signal can end the wait).
    std::future<lh::Term> next = elector.acquire(group, boost::asio::use_future);
    while (stop_requested == 0 && next.wait_for(100ms) != std::future_status::ready) {
    }
    if (stop_requested != 0) break;
    const lh::Term term = next.get();
    say(fmt::format("elected instance={} token={}", id, term.token()));

    while (stop_requested == 0 && term.active()) {
      ++seq;
      if (stall_requested != 0) {  // demonstration only: see the top of the file
        stall_requested = 0;
        say(fmt::format("stall instance={} token={} seq={}", id, term.token(), seq));
        std::raise(SIGSTOP);  // every thread stops, renewals included
      }
      // The leadership check above may be stale by now; the token makes the
      // database the judge.
      write_row(db.get(), group, id, term.token(), seq);
      std::this_thread::sleep_for(200ms);
    }
    if (stop_requested == 0) say(fmt::format("term_ended instance={} token={}", id, term.token()));
  }

  elector.stop_and_wait();  // releases the lease: a standby takes over at once
  say(fmt::format("stopped instance={}", id));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fenced_postgres: %s\n", e.what());
  return 2;
}
