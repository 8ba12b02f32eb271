#include "support/command.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace leasehold::test {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> adjusted_environment(const std::vector<std::string>& changes) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  for (const auto& change : changes) {
    const std::string name = change.substr(0, change.find('='));
    std::erase_if(env, [&](const std::string& v) { return v.compare(0, name.size() + 1, name + "=") == 0; });
    if (change.find('=') != std::string::npos) env.push_back(change);
  }
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string CommandResult::describe() const {
  return (exit_code ? "exit " + std::to_string(*exit_code) : std::string("killed")) + "; stdout: [" + out +
         "]; stderr: [" + err + "]";
}

Command::Command(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  if (argv.empty()) throw std::runtime_error("Command: empty argv");
  if (::access(argv[0].c_str(), X_OK) != 0) throw std::runtime_error("Command: cannot execute " + argv[0]);
  std::string templ = (std::filesystem::temp_directory_path() / "leasehold-command.XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("Command: mkdtemp failed");
  dir_ = templ;

  // Everything the child needs is prepared before fork(): after it, only
  // async-signal-safe calls.
  std::vector<std::string> args = argv;
  std::vector<std::string> vars = adjusted_environment(env);
  std::vector<char*> arg_ptrs = pointers(args);
  std::vector<char*> env_ptrs = pointers(vars);
  const std::string out_path = dir_ + "/stdout";
  const std::string err_path = dir_ + "/stderr";
  const pid_t parent = ::getpid();

  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error(std::string("Command: fork failed: ") + std::strerror(errno));
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0) ::_exit(127);
    if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(127);
    // No inherited sockets: the test's own Redis connections stay its own.
    ::close_range(3, ~0U, 0);
    ::execve(arg_ptrs[0], arg_ptrs.data(), env_ptrs.data());
    ::_exit(127);
  }
}

Command::~Command() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool Command::running() {
  if (status_) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) status_ = status;
  return !status_;
}

void Command::signal(int sig) const {
  if (!status_) ::kill(pid_, sig);
}

std::string Command::out() const { return slurp(dir_ + "/stdout"); }
std::string Command::err() const { return slurp(dir_ + "/stderr"); }

CommandResult Command::wait(std::chrono::milliseconds timeout, const std::function<void()>& pump) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running() && std::chrono::steady_clock::now() < deadline) {
    if (pump) pump();
    else std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (running()) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    status_ = status;
  }
  CommandResult result;
  if (WIFEXITED(*status_)) result.exit_code = WEXITSTATUS(*status_);
  result.out = out();
  result.err = err();
  return result;
}

CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::function<void()>& pump, std::chrono::milliseconds timeout) {
  Command command(argv, env);
  return command.wait(timeout, pump);
}

}  // namespace leasehold::test
