#pragma once
// HIP runtime calls checked: a failure throws HipCallError naming the call, file:line
// and the runtime's error name and string; the plugin turns it into TP_ERR_RUNTIME.

#include <stdexcept>
#include <string>

#include <hip/hip_runtime_api.h>

namespace tilepath::hip {

class HipCallError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The error's name, and its description where the runtime has one beyond the name.
inline std::string hip_error_text(hipError_t e) {
  const std::string name = hipGetErrorName(e), description = hipGetErrorString(e);
  return description.empty() || description == name ? name : name + " (" + description + ")";
}

inline void check_hip(hipError_t e, const char* call, const char* file, int line) {
  if (e != hipSuccess)
    throw HipCallError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                       hip_error_text(e));
}

}  // namespace tilepath::hip

#define TP_HIP_CHECK(call) ::tilepath::hip::check_hip((call), #call, __FILE__, __LINE__)
