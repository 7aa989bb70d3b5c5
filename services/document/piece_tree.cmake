# The piece tree: the text buffer under services/document, its unit test, its
# benchmark (B3 memory, B4, B5) and, in a clang tree, its differential fuzzer.
set(ECPD_PIECE_TREE_ROOT ${CMAKE_CURRENT_LIST_DIR}/../..)

# The tree and its edits; lines and columns; readers, lines in order and
# snapshots; the invariant check. piece_tree_internal.h is what they share.
set(ECPD_PIECE_TREE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/piece_tree.c
  ${CMAKE_CURRENT_LIST_DIR}/piece_tree_lines.c
  ${CMAKE_CURRENT_LIST_DIR}/piece_tree_iter.c
  ${CMAKE_CURRENT_LIST_DIR}/piece_tree_check.c)
add_library(ecpd_piece_tree STATIC ${ECPD_PIECE_TREE_SOURCES})
target_include_directories(ecpd_piece_tree PUBLIC ${CMAKE_CURRENT_LIST_DIR})

add_executable(piece_tree_test ${ECPD_PIECE_TREE_ROOT}/tests/unit/piece_tree_test.c)
target_link_libraries(piece_tree_test PRIVATE ecpd_piece_tree PkgConfig::CMOCKA)
# The out-of-memory tests fail chosen allocations of the tree: every malloc and
# aligned_alloc in the executable goes through the test's wrappers.
target_link_options(piece_tree_test PRIVATE "LINKER:--wrap=malloc,--wrap=aligned_alloc")
add_test(NAME unit.piece_tree COMMAND piece_tree_test)

add_executable(bench_piece_tree ${ECPD_PIECE_TREE_ROOT}/tests/bench/bench_piece_tree.c)
target_link_libraries(bench_piece_tree PRIVATE ecpd_piece_tree)

if(ECPD_FUZZ)
  # The fuzzer compiles its own copy of the tree with tiny piece and block
  # sizes, so that original pieces, add-block changes and large inserts all
  # happen within a few bytes of input.
  add_executable(fuzz_piece_tree
    ${ECPD_PIECE_TREE_ROOT}/tests/fuzz/piece_tree_fuzz.c
    ${ECPD_PIECE_TREE_SOURCES})
  target_include_directories(fuzz_piece_tree PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_compile_definitions(fuzz_piece_tree PRIVATE
    PIECE_TREE_ORIGINAL_PIECE=8 PIECE_TREE_ADD_BLOCK_MIN=16 PIECE_TREE_ADD_BLOCK_MAX=64 PIECE_TREE_FANOUT=4)
  target_compile_options(fuzz_piece_tree PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_piece_tree PRIVATE -fsanitize=fuzzer,address,undefined)
endif()
