#include "support/fault_proxy.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <atomic>
#include <deque>
#include <future>
#include <stdexcept>
#include <thread>
#include <unordered_set>
#include <utility>

namespace leasehold::test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct FaultProxy::Impl {
  struct Conn;

  // One direction of a proxied connection.
  struct Pipe {
    enum class Kind { data, eof, reset };
    struct Chunk {
      Kind kind;
      std::string bytes;
      Clock::time_point release;
    };

    Pipe(tcp::socket& from, tcp::socket& to, asio::io_context& io)
        : src(from), dst(to), timer(io) {}

    tcp::socket& src;
    tcp::socket& dst;
    std::array<char, 16384> buf{};
    std::deque<Chunk> queue;
    std::string inflight;     // the chunk being written (its buffer must live)
    asio::steady_timer timer;
    bool busy = false;        // waiting for a chunk's release time or writing
    bool finished = false;    // EOF passed on to dst
  };

  struct Conn : std::enable_shared_from_this<Conn> {
    explicit Conn(Impl& p, tcp::socket accepted)
        : proxy(p),
          client(std::move(accepted)),
          upstream(p.io),
          up(client, upstream, p.io),
          down(upstream, client, p.io) {}

    void start() {
      boost::system::error_code ignored;
      client.set_option(tcp::no_delay(true), ignored);
      read(up);
      upstream.async_connect(proxy.target, [self = shared_from_this()](boost::system::error_code ec) {
        self->on_connected(ec);
      });
    }

    void on_connected(boost::system::error_code ec) {
      if (closed) return;
      if (ec) {
        if (proxy.mode == Mode::blackhole) {
          poisoned = true;  // nothing may reach the client: keep it open, silent
        } else {
          abort();
        }
        return;
      }
      boost::system::error_code ignored;
      upstream.set_option(tcp::no_delay(true), ignored);
      upstream_ready = true;
      read(down);
      kick(up);
    }

    void read(Pipe& p) {
      p.src.async_read_some(asio::buffer(p.buf),
                            [self = shared_from_this(), &p](boost::system::error_code ec, std::size_t n) {
                              self->on_read(p, ec, n);
                            });
    }

    void on_read(Pipe& p, boost::system::error_code ec, std::size_t n) {
      if (closed) return;
      if (!ec) {
        if (proxy.mode == Mode::blackhole) {
          poisoned = true;
        } else {
          p.queue.push_back({Pipe::Kind::data, std::string(p.buf.data(), n),
                             Clock::now() + proxy.latency});
          kick(p);
        }
        read(p);
        return;
      }
      if (ec == asio::error::operation_aborted) return;
      if (proxy.mode == Mode::blackhole) {
        poisoned = true;  // the peer's close is swallowed too
        return;
      }
      const auto kind = ec == asio::error::eof ? Pipe::Kind::eof : Pipe::Kind::reset;
      p.queue.push_back({kind, {}, Clock::now() + proxy.latency});
      kick(p);
    }

    // Writes the next chunk of p when it is due and the mode allows.
    void kick(Pipe& p) {
      if (closed || p.busy || p.queue.empty()) return;
      if (proxy.mode != Mode::forward) return;
      if (&p == &up && !upstream_ready) return;
      auto& front = p.queue.front();
      if (front.release > Clock::now()) {
        p.busy = true;
        p.timer.expires_at(front.release);
        p.timer.async_wait([self = shared_from_this(), &p](boost::system::error_code) {
          p.busy = false;
          self->kick(p);
        });
        return;
      }
      Pipe::Chunk chunk = std::move(front);
      p.queue.pop_front();
      switch (chunk.kind) {
        case Pipe::Kind::data:
          p.inflight = std::move(chunk.bytes);
          p.busy = true;
          asio::async_write(p.dst, asio::buffer(p.inflight),
                            [self = shared_from_this(), &p](boost::system::error_code ec, std::size_t) {
                              p.busy = false;
                              if (self->closed) return;
                              if (ec) {
                                self->abort();
                                return;
                              }
                              self->kick(p);
                            });
          break;
        case Pipe::Kind::eof: {
          p.finished = true;
          boost::system::error_code ignored;
          p.dst.shutdown(tcp::socket::shutdown_send, ignored);
          if (up.finished && down.finished) close(false);
          break;
        }
        case Pipe::Kind::reset:
          abort();
          break;
      }
    }

    void abort() { close(true); }

    void close(bool with_reset) {
      if (closed) return;
      closed = true;
      boost::system::error_code ignored;
      for (tcp::socket* s : {&client, &upstream}) {
        if (with_reset && s->is_open()) s->set_option(asio::socket_base::linger(true, 0), ignored);
        s->close(ignored);
      }
      up.timer.cancel();
      down.timer.cancel();
      up.queue.clear();
      down.queue.clear();
      proxy.open.fetch_sub(1, std::memory_order_relaxed);
      proxy.conns.erase(shared_from_this());
    }

    Impl& proxy;
    tcp::socket client;
    tcp::socket upstream;
    Pipe up;    // client -> upstream
    Pipe down;  // upstream -> client
    bool upstream_ready = false;
    bool poisoned = false;  // swallowed bytes in blackhole mode
    bool closed = false;
  };

  Impl(std::uint16_t target_port, const std::string& target_host)
      : target(asio::ip::make_address(target_host), target_port) {
    tcp::endpoint listen(asio::ip::address_v4::loopback(), 0);
    acceptor.open(listen.protocol());
    acceptor.set_option(tcp::acceptor::reuse_address(true));
    acceptor.bind(listen);
    acceptor.listen(asio::socket_base::max_listen_connections);
    port = acceptor.local_endpoint().port();
    accept();
    thread = std::thread([this] { io.run(); });
  }

  ~Impl() {
    asio::post(io, [this] {
      stopping = true;
      boost::system::error_code ignored;
      acceptor.close(ignored);
      auto all = conns;
      for (const auto& c : all) c->abort();
      work.reset();
    });
    thread.join();
  }

  void accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (stopping || ec == asio::error::operation_aborted) return;
      if (!ec) {
        accepted.fetch_add(1, std::memory_order_relaxed);
        if (refusing_now) {
          boost::system::error_code ignored;
          socket.set_option(asio::socket_base::linger(true, 0), ignored);
          socket.close(ignored);
        } else {
          auto conn = std::make_shared<Conn>(*this, std::move(socket));
          conns.insert(conn);
          open.fetch_add(1, std::memory_order_relaxed);
          conn->start();
        }
      }
      accept();
    });
  }

  // Runs f on the proxy thread and waits for it (bounded).
  template <class F>
  void run_sync(F f) {
    auto done = std::make_shared<std::promise<void>>();
    auto future = done->get_future();
    asio::post(io, [f = std::move(f), done]() mutable {
      f();
      done->set_value();
    });
    if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      throw std::runtime_error("FaultProxy: proxy thread unresponsive");
    }
  }

  void set_mode(Mode next) {
    run_sync([this, next] {
      const Mode prev = mode;
      mode = next;
      mode_view.store(next, std::memory_order_relaxed);
      refusing_now = false;
      refusing_view.store(false, std::memory_order_relaxed);
      auto all = conns;
      for (const auto& c : all) {
        if (next == Mode::blackhole) {
          for (Pipe* p : {&c->up, &c->down}) {
            if (!p->queue.empty()) c->poisoned = true;
            p->queue.clear();
          }
        } else if (prev == Mode::blackhole && c->poisoned) {
          c->abort();
          continue;
        }
        c->kick(c->up);
        c->kick(c->down);
      }
    });
  }

  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  tcp::acceptor acceptor{io};
  tcp::endpoint target;
  std::uint16_t port = 0;
  std::thread thread;

  // Owned by the proxy thread.
  Mode mode = Mode::forward;
  bool refusing_now = false;
  std::chrono::milliseconds latency{0};
  std::unordered_set<std::shared_ptr<Conn>> conns;
  bool stopping = false;

  // Readable from any thread.
  std::atomic<Mode> mode_view{Mode::forward};
  std::atomic<bool> refusing_view{false};
  std::atomic<std::size_t> open{0};
  std::atomic<std::size_t> accepted{0};
};

FaultProxy::FaultProxy(std::uint16_t target_port, std::string target_host)
    : impl_(std::make_unique<Impl>(target_port, target_host)) {}

FaultProxy::~FaultProxy() = default;

std::uint16_t FaultProxy::port() const noexcept { return impl_->port; }

void FaultProxy::forward() { impl_->set_mode(Mode::forward); }
void FaultProxy::blackhole() { impl_->set_mode(Mode::blackhole); }
void FaultProxy::stall() { impl_->set_mode(Mode::stall); }

void FaultProxy::refuse() {
  impl_->run_sync([impl = impl_.get()] {
    impl->refusing_now = true;
    impl->refusing_view.store(true, std::memory_order_relaxed);
  });
}

void FaultProxy::reset_all() {
  impl_->run_sync([impl = impl_.get()] {
    auto all = impl->conns;
    for (const auto& c : all) c->abort();
  });
}

void FaultProxy::set_latency(std::chrono::milliseconds latency) {
  impl_->run_sync([impl = impl_.get(), latency] { impl->latency = latency; });
}

FaultProxy::Mode FaultProxy::mode() const noexcept {
  return impl_->mode_view.load(std::memory_order_relaxed);
}

bool FaultProxy::refusing() const noexcept {
  return impl_->refusing_view.load(std::memory_order_relaxed);
}

std::size_t FaultProxy::connection_count() const noexcept {
  return impl_->open.load(std::memory_order_relaxed);
}

std::size_t FaultProxy::accepted_count() const noexcept {
  return impl_->accepted.load(std::memory_order_relaxed);
}

bool FaultProxy::wait_for_connections(std::size_t n, std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (connection_count() < n) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

leasehold::RedisOptions FaultProxy::options_for(leasehold::RedisOptions base) const {
  base.host = "127.0.0.1";
  base.port = port();
  base.unix_socket.clear();
  return base;
}

}  // namespace leasehold::test
