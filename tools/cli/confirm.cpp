#include "confirm.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <string>

namespace leasehold::cli {

bool can_ask() { return ::isatty(STDIN_FILENO) == 1; }

bool ask(std::string_view question) {
  std::fprintf(stderr, "%.*s [y/N] ", static_cast<int>(question.size()), question.data());
  std::fflush(stderr);
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  std::transform(answer.begin(), answer.end(), answer.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return answer == "y" || answer == "yes";
}

}  // namespace leasehold::cli
