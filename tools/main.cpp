// fp4kit: the command-line tool. Usage and sample output: docs/CLI.md.
//
// Every error (a bad option, a failed fp4kit call, a CUDA error, out of memory) is reported as one
// line on stderr, "fp4kit: error: ...", with a non-zero exit code: 2 for usage errors, 1 otherwise.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "commands.h"
#include "fp4kit/device.h"

namespace {

// One line: the message, with newlines folded (CLI11 messages can span lines).
void print_error(const std::string& message) {
  std::string line = message;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  while (!line.empty() && line.back() == ' ') line.pop_back();
  std::fprintf(stderr, "fp4kit: error: %s\n", line.c_str());
}

// "fp4kit bench: expected one of quantize, gemm (see fp4kit bench --help)" for a missing or unknown
// subcommand; CLI11's own message otherwise.
std::string parse_error_message(CLI::App& app, const CLI::ParseError& e) {
  CLI::App* deepest = &app;
  std::string path = app.get_name();
  while (!deepest->get_subcommands().empty()) {
    deepest = deepest->get_subcommands().front();
    path += " " + deepest->get_name();
  }
  const auto subs = deepest->get_subcommands([](CLI::App*) { return true; });
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !subs.empty()) {
    std::string names;
    for (const CLI::App* s : subs) names += (names.empty() ? "" : ", ") + s->get_name();
    const std::string where = deepest == &app ? "" : path.substr(app.get_name().size() + 1) + ": ";
    return where + "missing or unknown command, expected one of " + names + " (see " + path + " --help)";
  }
  return std::string(e.what()) + " (see " + path + " --help)";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fp4kit::cli;
  CLI::App app{"fp4kit: NVFP4 quantization and W4A16/W4A4 GEMM on Hopper (sm_90a)", "fp4kit"};
  app.set_version_flag("--version", std::string("fp4kit ") + fp4kit::version());
  app.require_subcommand(1, 1);
  app.fallthrough(false);

  std::vector<Command> commands;
  try {
    using AddCommand = Command (*)(CLI::App&);
    static constexpr AddCommand kCommands[] = {add_info_command, add_demo_command, add_bench_command,
                                               add_tune_command, add_quantize_command, add_inspect_command};
    for (AddCommand add : kCommands) commands.push_back(add(app));
  } catch (const std::exception& e) {
    print_error(std::string("internal: ") + e.what());
    return 1;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(parse_error_message(app, e));
    return 2;
  } catch (const CliError& e) {  // a value rejected while parsing (e.g. a malformed list)
    print_error(e.what());
    return 2;
  }

  for (const Command& cmd : commands) {
    if (!cmd.app->parsed()) continue;
    try {
      return cmd.run();
    } catch (const CliError& e) {
      print_error(cmd.app->get_name() + ": " + e.what());
    } catch (const std::bad_alloc&) {
      print_error(cmd.app->get_name() + ": out of host memory");
    } catch (const std::exception& e) {
      print_error(cmd.app->get_name() + ": " + e.what());
    }
    return 1;
  }
  print_error("no command given (see fp4kit --help)");
  return 2;
}
