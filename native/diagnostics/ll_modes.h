// The diagnostic module's table of LL-mode launchers (ll_modes.cu).
#pragma once
#include "hpcolls/diagnostics.h"

namespace hpcolls::diagnostics {

const DiagnosticLaunchers* ll_mode_launchers();

}  // namespace hpcolls::diagnostics
