# Enables CUDA in the including directory (the plugin and its GPU tests).
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
# CMake 3.25 does not know that nvcc >= 12 speaks C++20; teach it (targets
# default CUDA_STANDARD to CXX_STANDARD, which is 20 here). Directory-scoped, so
# every directory with CUDA sources includes this file.
if(NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
endif()
