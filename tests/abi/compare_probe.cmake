# Runs the ABI probe and compares its output with the reference facts.
#
#   cmake -DPROBE=<probe executable> -DREFERENCE=<abi_reference.txt> -P compare_probe.cmake
#
# Both sides are compared as sorted lists of lines. The reference is kept sorted with `sort`;
# to be independent of the locale that file was sorted in, both lists are re-sorted here
# bytewise (as `LC_ALL=C sort` does) before comparing. Blank lines and trailing CR/whitespace
# are ignored. On mismatch the differing lines (first 20) are printed and the script fails.
cmake_minimum_required(VERSION 3.20)

if(NOT DEFINED PROBE OR NOT DEFINED REFERENCE)
  message(FATAL_ERROR "usage: cmake -DPROBE=<exe> -DREFERENCE=<file> -P compare_probe.cmake")
endif()
if(NOT EXISTS "${PROBE}")
  message(FATAL_ERROR "probe executable not found: ${PROBE}")
endif()
if(NOT EXISTS "${REFERENCE}")
  message(FATAL_ERROR "reference file not found: ${REFERENCE}")
endif()

execute_process(
  COMMAND "${PROBE}"
  RESULT_VARIABLE probe_rc
  OUTPUT_VARIABLE probe_out
  ERROR_VARIABLE probe_err)
if(NOT probe_rc STREQUAL "0")
  message(FATAL_ERROR "probe ${PROBE} failed (${probe_rc}):\n${probe_err}")
endif()
if(NOT probe_err STREQUAL "")
  message(WARNING "probe wrote to stderr:\n${probe_err}")
endif()

file(READ "${REFERENCE}" ref_text)

# Text -> sorted CMake list of lines. ';', '[' and ']' would disturb CMake's list splitting,
# so they are replaced by placeholders (both sides identically) and restored for printing.
function(_lines_to_sorted_list text out_var)
  string(REPLACE "\r" "" text "${text}")
  string(REPLACE ";" "<SEMI>" text "${text}")
  string(REPLACE "[" "<LBR>" text "${text}")
  string(REPLACE "]" "<RBR>" text "${text}")
  string(REPLACE "\n" ";" raw "${text}")
  set(lines "")
  foreach(l IN LISTS raw)
    string(STRIP "${l}" l)
    if(NOT l STREQUAL "")
      list(APPEND lines "${l}")
    endif()
  endforeach()
  list(SORT lines COMPARE STRING CASE SENSITIVE ORDER ASCENDING)
  set(${out_var} "${lines}" PARENT_SCOPE)
endfunction()

function(_decode line out_var)
  string(REPLACE "<SEMI>" ";" line "${line}")
  string(REPLACE "<LBR>" "[" line "${line}")
  string(REPLACE "<RBR>" "]" line "${line}")
  set(${out_var} "${line}" PARENT_SCOPE)
endfunction()

_lines_to_sorted_list("${probe_out}" probe_lines)
_lines_to_sorted_list("${ref_text}" ref_lines)

if(probe_lines STREQUAL ref_lines)
  list(LENGTH ref_lines n)
  message(STATUS "ABI probe matches reference (${n} facts)")
  return()
endif()

# Multiset difference, walking both sorted lists in step (like `comm -3`).
list(LENGTH probe_lines np)
list(LENGTH ref_lines nr)
set(i 0)
set(j 0)
set(diffs "")
set(ndiff 0)
while(i LESS np OR j LESS nr)
  if(i LESS np)
    list(GET probe_lines ${i} a)
  endif()
  if(j LESS nr)
    list(GET ref_lines ${j} b)
  endif()
  if(i LESS np AND j LESS nr AND a STREQUAL b)
    math(EXPR i "${i} + 1")
    math(EXPR j "${j} + 1")
  elseif(j GREATER_EQUAL nr OR (i LESS np AND a STRLESS b))
    _decode("${a}" d)
    string(APPEND diffs "  + ${d}   (probe only)\n")
    math(EXPR ndiff "${ndiff} + 1")
    math(EXPR i "${i} + 1")
  else()
    _decode("${b}" d)
    string(APPEND diffs "  - ${d}   (reference only)\n")
    math(EXPR ndiff "${ndiff} + 1")
    math(EXPR j "${j} + 1")
  endif()
  if(ndiff GREATER_EQUAL 20)
    break()
  endif()
endwhile()

message(FATAL_ERROR
  "ABI probe output differs from ${REFERENCE} "
  "(probe: ${np} lines, reference: ${nr} lines); first differences:\n"
  "  '-' = expected by the reference but not printed by the probe, "
  "'+' = printed by the probe but not in the reference\n"
  "${diffs}")
