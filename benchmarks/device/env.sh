# Source on the GPU machine: use the tree in place (no install needed; rich, numpy, torch are there).
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export KERNELRL_CACHE="${KERNELRL_CACHE:-$PWD/.krcache}"
kernelrl() { python3 -m kernelrl.cli "$@"; }

# Ray from the carried tar (benchmarks/device/pack_ray.sh), into SITE (default /tmp/site), ahead on PYTHONPATH. Tars packed
# before pack_ray.sh kept file modes lack the execute bits of Ray's two binaries: restored here.
carry_ray() {
    local site="${SITE:-/tmp/site}"
    [ -f .carry/ray-py3.12.tar.xz ] || { echo "no .carry/ray-py3.12.tar.xz: run benchmarks/device/pack_ray.sh"; return 1; }
    mkdir -p "$site" && tar -xJf .carry/ray-py3.12.tar.xz -C "$site" && export PYTHONPATH="$site:$PYTHONPATH"
    chmod +x "$site/ray/core/src/ray/gcs/gcs_server" "$site/ray/core/src/ray/raylet/raylet" 2>/dev/null
    return 0
}

# ninja on PATH from the carried wheel (.whl), where the machine has none: torch's extension builder needs it
# (load_inline candidates, the tuned library's C++ dispatch fast path).
carry_ninja() {
    if ! command -v ninja >/dev/null 2>&1 && ls .whl/ninja-*.whl >/dev/null 2>&1; then
        python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ninja .whl/ninja-*.whl
        export PATH="/tmp/ninja/bin:/tmp/ninja/ninja/data/bin:$PATH" PYTHONPATH="$PYTHONPATH:/tmp/ninja"
    fi
}

# The CUTLASS/CuTe headers from the carried wheel (.whl/nvidia_cutlass-*.whl) into SITE (default /tmp/site), ahead on
# PYTHONPATH; and the build cache a CPU machine filled (.carry/build-cache.tar.xz, benchmarks/device/tune.sh says how)
# into KERNELRL_CACHE. Each says so when its file was not carried.
carry_cutlass() {
    local site="${SITE:-/tmp/site}"
    if ls .whl/nvidia_cutlass-*.whl >/dev/null 2>&1; then
        python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/nvidia_cutlass-*.whl
        export PYTHONPATH="$site:$PYTHONPATH"
    else
        echo "no .whl/nvidia_cutlass-*.whl: no CUTLASS headers"
    fi
}
carry_build_cache() {
    mkdir -p "$KERNELRL_CACHE"
    if [ -f .carry/build-cache.tar.xz ]; then tar -xJf .carry/build-cache.tar.xz -C "$KERNELRL_CACHE"
    else echo "no .carry/build-cache.tar.xz: every candidate compiles here"; fi
}

# The CuTe DSL in parts (benchmarks/device/pack_cute_dsl.sh): a carried part is kept in the ignored .cutedsl/ (it
# survives to the next call while the machine stays warm); with every part there, the bundle is checked, the
# library wheel remade from its tree, everything installed into /tmp/cutedsl and put on PYTHONPATH (workers inherit
# it).
carry_cute_dsl() {
    mkdir -p .cutedsl
    for dir in .carry/cute_dsl_*; do
        [ -f "$dir/part" ] || continue
        cp "$dir/part" ".cutedsl/part_${dir##*_}"; cp "$dir/sha256" "$dir/count" .cutedsl/
    done
    local have; have=$(ls .cutedsl/part_* 2>/dev/null | wc -l)
    if [ ! -d /tmp/cutedsl ] && [ -f .cutedsl/count ] && [ "$have" -eq "$(cat .cutedsl/count)" ]; then
        local joined; joined=$(mktemp)
        for k in $(seq 1 "$(cat .cutedsl/count)"); do cat ".cutedsl/part_$k"; done > "$joined"
        if [ "$(sha256sum < "$joined" | cut -d' ' -f1)" != "$(cat .cutedsl/sha256)" ]; then
            echo "carry_cute_dsl: the parts do not make the packed bundle (sha256): pack and carry them again"
            rm -f "$joined"; return 1; fi
        local bundle; bundle=$(mktemp -d)
        xz -dc "$joined" | tar -x -C "$bundle"; rm -f "$joined"
        (cd "$bundle/libs_tree" && python3 -c "import shutil, sys; shutil.make_archive(sys.argv[1], 'zip', '.')" \
            "$bundle/libs" && mv "$bundle/libs.zip" "$bundle/$(cat "$bundle/libs_wheel_name")")
        python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutedsl ${PIP_TARGET_ARGS:-} \
            "$bundle"/*.whl
        rm -rf "$bundle"
    fi
    # the package's .pth puts dsl_packages (where `cutlass` is) on sys.path; a PYTHONPATH entry runs no .pth
    if [ -d /tmp/cutedsl ]; then export PYTHONPATH="/tmp/cutedsl:/tmp/cutedsl/nvidia_cutlass_dsl/dsl_packages:${PYTHONPATH:-}"
    else echo "carry_cute_dsl: $have of $(cat .cutedsl/count 2>/dev/null || echo '?') parts here: the rest in the next calls"; fi
}
