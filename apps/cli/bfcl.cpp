#include "common.h"
namespace cli {
void add_bfcl_command(CLI::App&) {}
}
