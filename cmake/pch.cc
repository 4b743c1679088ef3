// Nothing of its own: CMake compiles a precompiled header only for a target
// with a source, so soak_pch and soak_test_pch each hold this file
// (cmake/PrecompiledHeaders.cmake).
