// Placeholder while the module is written; replaced by the real bindings.
#include "ops.h"

namespace ot {
void register_elementwise(Napi::Env env, Napi::Object exports) {}
}  // namespace ot
