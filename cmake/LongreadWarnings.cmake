# Warnings for the project's own targets: longread_warnings(target)
function(longread_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
        -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough
        -Wno-missing-field-initializers>)
  endif()
endfunction()
