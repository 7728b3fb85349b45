// The subcommands of the fp4kit CLI. Each cmd_<name>.cpp registers one subcommand on the app and
// returns the function main() runs when that subcommand was selected.
//
// Adding a subcommand (planned: `tune`, `quantize IN OUT`, `inspect FILE`): write
// tools/cmd_<name>.cpp with `Command add_<name>_command(CLI::App& app)`, declare it below, list it in
// kCommands in main.cpp and in tools/CMakeLists.txt, and document it in docs/CLI.md.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "cli_util.h"
#include "fp4kit/status.h"

namespace fp4kit::cli {

struct Command {
  CLI::App* app = nullptr;   // the subcommand, owned by the parent app
  std::function<int()> run;  // exit code; throws CliError for user-facing errors
};

Command add_info_command(CLI::App& app);
Command add_demo_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_quantize_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_tune_command(CLI::App& app);

// Throws CliError("<status>") for a non-OK status of an fp4kit call.
inline void check(const Status& s) {
  if (!s.is_ok()) throw CliError(s.to_string());
}

}  // namespace fp4kit::cli
