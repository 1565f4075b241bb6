#!/usr/bin/env bash
# The per-ISA builds of Eigen's sgemm (kernels/cpu/gemm_eigen_*.cc) must define no symbol another
# object could share: each renames Eigen's namespace, so its templates, compiled for its own SIMD
# flags, cannot merge with another build's at link time (the linker keeps one copy of a weak
# symbol, which could be the AVX-512 one on an AVX2 CPU). Arguments: the objects of
# qcc_cpu_kernels (ctest passes $<TARGET_OBJECTS:...> as one ';'-separated argument); the
# gemm_eigen_* ones are checked. Fails listing every global or weak symbol
# that is neither the build's entry point, nor in its own Qcc Eigen namespace, nor the C++
# runtime's personality reference.
set -euo pipefail
checked=0
bad=0
objects=()
for arg in "$@"; do
  IFS=';' read -r -a split <<<"$arg"
  objects+=("${split[@]}")
done
for obj in "${objects[@]}"; do
  base="$(basename "$obj")"
  case "$base" in
    gemm_eigen_avx512.*) isa=Avx512 ;;
    gemm_eigen_avx2.*) isa=Avx2 ;;
    gemm_eigen_baseline.*) isa=Baseline ;;
    *) continue ;;
  esac
  checked=$((checked + 1))
  # Defined, external (global or weak) symbols, demangled: "ADDRESS TYPE NAME".
  while IFS= read -r line; do
    name="${line#* * }"
    case "$name" in
      "qcc::cpu::internal::SgemmEigen${isa}("*) ;;
      DW.ref.__gxx_personality_v0) ;;
      *"QccEigen${isa}::"*) ;;
      *)
        echo "$base: symbol outside QccEigen${isa}: $name"
        bad=$((bad + 1))
        ;;
    esac
  done < <(nm -C --defined-only --extern-only "$obj")
  # (grep without -q: with pipefail, -q's early exit would fail nm with SIGPIPE.)
  if ! nm -C --defined-only --extern-only "$obj" | grep "SgemmEigen${isa}(" >/dev/null; then
    echo "$base: no qcc::cpu::internal::SgemmEigen${isa} defined"
    bad=$((bad + 1))
  fi
done
if ((checked != 3)); then
  echo "expected the 3 gemm_eigen_* objects among the arguments, found $checked"
  exit 1
fi
if ((bad > 0)); then
  echo "FAIL: $bad symbol(s) could merge across the per-ISA builds"
  exit 1
fi
echo "gemm_eigen: 3 objects, every external symbol in its own namespace"
