# Builds one package with cpack (FORMAT: DEB, RPM or TGZ) into a scratch directory and checks
# what it installs: the programs, the desktop entry, the icon and the metadata; for DEB and
# RPM also that its dependencies, worked out from the binaries, name sentencepiece and Qt,
# and that its description is Longread's (not CPack's placeholder); for RPM that it owns
# no shared folder.
#   cmake -DFORMAT=RPM -DTOOL=rpm -DBINARY_DIR=<build> -DWITH_GUI=1 -P check_package.cmake
# TOOL lists a package: dpkg-deb for DEB, rpm for RPM, tar for TGZ.
if(FORMAT STREQUAL "DEB")
  set(suffix deb)
elseif(FORMAT STREQUAL "RPM")
  set(suffix rpm)
elseif(FORMAT STREQUAL "TGZ")
  set(suffix tar.gz)
else()
  message(FATAL_ERROR "FORMAT must be DEB, RPM or TGZ, not '${FORMAT}'")
endif()

set(out ${BINARY_DIR}/package-test-${suffix})
file(REMOVE_RECURSE ${out})
file(MAKE_DIRECTORY ${out})
execute_process(COMMAND ${CMAKE_CPACK_COMMAND} -G ${FORMAT} -B ${out} WORKING_DIRECTORY ${BINARY_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpack -G ${FORMAT} failed:\n${log}")
endif()
file(GLOB package ${out}/*.${suffix})
list(LENGTH package n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one .${suffix} in ${out}, found ${n}")
endif()

if(FORMAT STREQUAL "DEB")
  set(list_files ${TOOL} -c ${package})
  set(list_depends ${TOOL} -f ${package} Depends)
  set(describe ${TOOL} -f ${package} Description)
  set(needed libsentencepiece libqt6core6)
  if(WITH_GUI)
    list(APPEND needed libqt6widgets6)
  endif()
elseif(FORMAT STREQUAL "RPM")
  set(list_files ${TOOL} -qlp ${package})
  set(list_depends ${TOOL} -qp --requires ${package})
  set(describe ${TOOL} -qp --qf "%{DESCRIPTION}" ${package})
  set(needed libsentencepiece.so libQt6Core.so)
  if(WITH_GUI)
    list(APPEND needed libQt6Widgets.so)
  endif()
else()
  set(list_files ${TOOL} -tzf ${package})
endif()

# One installed path a line: each expected path must end one (bin/longread is not
# bin/longread-cli).
execute_process(COMMAND ${list_files} OUTPUT_VARIABLE contents RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR contents STREQUAL "")
  message(FATAL_ERROR "${list_files} failed (${rc})")
endif()
set(programs bin/longread-cli)
if(WITH_GUI)
  list(APPEND programs bin/longread)
endif()
foreach(expected ${programs} share/applications/io.longread.Longread.desktop
        share/icons/hicolor/scalable/apps/io.longread.Longread.svg share/metainfo/io.longread.Longread.metainfo.xml)
  string(REPLACE "." "\\." pattern "${expected}")
  if(NOT contents MATCHES "/${pattern}(\n|$)")
    message(FATAL_ERROR "the ${FORMAT} package lacks ${expected}:\n${contents}")
  endif()
endforeach()

# The RPM leaves the shared folders (applications, icons, metainfo) to the system.
set(shared "applications|metainfo|icons|icons/hicolor|icons/hicolor/scalable|icons/hicolor/scalable/apps")
if(FORMAT STREQUAL "RPM" AND contents MATCHES "(^|\n)/usr/share/(${shared})(\n|$)")
  message(FATAL_ERROR "the RPM package owns a shared folder:\n${contents}")
endif()

# DEB and RPM: Longread's description (not CPack's placeholder), and dependencies that
# name sentencepiece and Qt.
set(depends "")
if(NOT FORMAT STREQUAL "TGZ")
  execute_process(COMMAND ${describe} OUTPUT_VARIABLE description)
  string(FIND "${description}" "Longread runs GGUF models" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the ${FORMAT} package's description is not Longread's:\n${description}")
  endif()
  execute_process(COMMAND ${list_depends} OUTPUT_VARIABLE depends RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${list_depends} failed (${rc})")
  endif()
  foreach(library ${needed})
    string(FIND "${depends}" "${library}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "the ${FORMAT} package's dependencies miss ${library}:\n${depends}")
    endif()
  endforeach()
endif()
file(SIZE ${package} bytes)
message(STATUS "${FORMAT} package ok: ${package} (${bytes} bytes)\n${depends}")
