"""`jit`: stage a function into StableHLO, compile it with IREE, run it on a device.

A jitted function is specialized per pytree structure, shapes, dtypes (weak types
included) and static argument values. Each specialization is traced once, compiled once
(or loaded from the disk cache), and then called through IREE's VM directly; results stay
on the device as `DeviceArray`s. Each compile is timed and, with
``config.update("log_compiles", True)``, logged with why it happened (compile_log.py).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import operator
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import numpy as np

import runtime
from iree.runtime import HalBufferView, VmVariantList
from runtime.array import host_to_buffer_view
from runtime.callbacks import raised_in_host_function
from transpiler import compile_log, tree_util
from transpiler.array import Array, DeviceArray
from transpiler.codegen import disk_cache
from transpiler.compiler import compile_or_load, compile_vmfb, lower_to_stage, module_flags
from transpiler.config import config
from transpiler.per_thread import PerThreadList
from transpiler.tracebacks import filtered
from transpiler.errors import (frame_location, internal_file, located, located_type,
                               unwrapped_tracer_error, user_location)
from transpiler.lowering.trace import StagedModule, trace_to_module
from transpiler.lax.linalg.common import lapack_on_host
from transpiler.primitives import core
from transpiler.primitives.core import ShapedArray, abstractify
from transpiler.transforms.common.generated import (ModuleCode, Staged, at_creation,
                                                    carries_its_function)
from transpiler.cache_files import write_atomic
from transpiler.sharding.hlo import annotate
from transpiler.sharding.placement import (check_placement, check_shardings, leaf_shardings,
                                          reshard)
from transpiler.sharding.specs import NamedSharding
from transpiler.transforms.autograph.runtime import convert_for_jit

DeviceLike = Union[None, str, runtime.Device]


def _resolve_device(device: DeviceLike, work: int) -> runtime.Device:
    if isinstance(device, runtime.Device):
        return device
    kind = device or config.default_device
    if kind == "auto":  # one core and ~3 us a call, or all cores and ~30 us a call
        kind = "local-task" if work >= config.multithread_threshold else "local-sync"
    return runtime.Device(kind)


class Executable:
    """One compiled specialization: flat device buffers in, flat device buffers out."""

    def __init__(self, staged: StagedModule, in_avals: Sequence[ShapedArray], out_tree: Any,
                 device: DeviceLike, target: str = "llvm-cpu") -> None:
        self.staged = staged
        self.in_avals = list(in_avals)
        self.out_avals = staged.out_avals
        self.out_tree = out_tree
        work = sum(a.size for a in self.in_avals) + sum(a.size for a in self.out_avals)
        self.device = _resolve_device(device, work)
        self.target = target
        extra = module_flags(staged.text()) if target == "llvm-cpu" else []
        self.vmfb, self.from_disk_cache = compile_or_load(staged.bytecode(), target,
                                                          extra_flags=extra)
        self.module = runtime.load(self.vmfb, self.device, array_class=DeviceArray)
        function = self.module[staged.name]
        self._context_invoke = function._context.invoke
        self._vm_function = function._vm_function
        self._out = [(a.dtype, a.shape) for a in self.out_avals]
        self._n_out = len(self._out)
        self._single = out_tree == tree_util.tree_structure(0)
        # Buffers of scalar arguments by (dtype, value): a module never writes its inputs.
        self._scalars: dict[tuple, Any] = {}

    def _buffer(self, leaf: Any, aval: ShapedArray) -> Any:
        if type(leaf) is DeviceArray and leaf.dtype == aval.dtype:
            if leaf.device is self.device or (leaf.device.platform == "cpu"
                                              and self.device.platform == "cpu"):
                return leaf._bv
        if type(leaf) is aval.dtype.type:  # a NumPy scalar of the argument's type
            value = leaf
        elif isinstance(leaf, Array):
            value = leaf._value
        else:
            value = np.asarray(leaf, dtype=aval.dtype)
        if value.ndim:
            return host_to_buffer_view(self.device.hal, np.asarray(value, aval.dtype))
        # A scalar (a step size, a flag): its buffer is kept for the next call that passes
        # the same bits (a module never writes its inputs).
        key = (aval.dtype, value.tobytes())
        view = self._scalars.get(key)
        if view is None:
            if len(self._scalars) >= 64:
                self._scalars.clear()
            view = self._scalars[key] = host_to_buffer_view(
                self.device.hal, np.asarray(value, aval.dtype))
        return view

    def __call__(self, leaves: Sequence[Any]) -> Any:
        return self._run([self._buffer(leaf, aval) for leaf, aval in zip(leaves, self.in_avals)])

    def call_device_arrays(self, args: Sequence[Any]) -> Any:
        """The hot path: every argument is already a DeviceArray of the right type."""
        return self._run([a._bv for a in args])

    def _run(self, views: Sequence[Any]) -> Any:
        """The function on these argument buffers; its outputs as DeviceArrays in the output
        structure."""
        arg_list = VmVariantList(len(views))
        for view in views:
            arg_list.push_ref(view)
        ret_list = VmVariantList(self._n_out)
        try:
            self._context_invoke(self._vm_function, arg_list, ret_list)
        except Exception as err:
            raised = raised_in_host_function()  # (a callback's own error, as it is)
            if raised is not None:
                raise raised from None
            raise RuntimeError(f"{self.staged.name}() failed in IREE: {err}") from err
        get, wrap = ret_list.get_as_object, DeviceArray._wrap
        if self._single:
            dt, shape = self._out[0]
            return wrap(get(0, HalBufferView), self.device, dt, shape)
        device = self.device
        outs = [wrap(get(i, HalBufferView), device, dt, shape)
                for i, (dt, shape) in enumerate(self._out)]
        return tree_util.tree_unflatten(self.out_tree, outs)


class Lowered:
    """``jit(f).lower(*args)``: the staged module of one specialization."""

    def __init__(self, jitted: "Jitted", key: Any, staged: StagedModule,
                 in_avals: Sequence[ShapedArray], out_tree: Any, in_tree: Any) -> None:
        self._jitted, self._key = jitted, key
        self.staged, self.in_avals = staged, in_avals
        self.out_tree, self.in_tree = out_tree, in_tree

    def as_text(self, stage: str = "stablehlo", debug_info: bool = False) -> str:
        """MLIR text at `stage`: ``stablehlo`` (what we emit), ``linalg``, or ``flow``."""
        if stage == "stablehlo":
            return self.staged.text(debug_info)
        return lower_to_stage(self.staged.bytecode(), stage)

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.staged.out_avals

    def compile(self, target: str = "llvm-cpu", device: DeviceLike = None) -> Any:
        """Compile for `target`. A GPU target (``vulkan-spirv``, ``cuda``, ``rocm``) given no
        `device` is cross-compiled: save it, and load it where that hardware exists."""
        if target != "llvm-cpu" and device is None:
            return CrossCompiled(compile_vmfb(self.staged.bytecode(), target), target,
                                 self.staged)
        executable = Executable(self.staged, self.in_avals, self.out_tree,
                                device if device is not None else self._jitted._device, target)
        return Compiled(executable, self.in_tree)


class Compiled:
    """A compiled specialization: call it with arguments of the same structure, or save it."""

    def __init__(self, executable: Executable, in_tree: Any) -> None:
        self.executable, self.in_tree = executable, in_tree

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves, tree = tree_util.tree_flatten((args, kwargs))
        if tree != self.in_tree:
            raise TypeError(f"compiled function expects arguments structured as {self.in_tree}, "
                            f"got {tree}")
        for i, (leaf, aval) in enumerate(zip(leaves, self.executable.in_avals)):
            got = abstractify(leaf, i, "compiled function")
            if got.shape != aval.shape or got.dtype != aval.dtype:
                raise TypeError(f"compiled function argument {i}: expected {aval}, got {got}")
        return self.executable(leaves)

    def as_text(self) -> str:
        return self.executable.staged.text()

    def save(self, path: Any) -> None:
        """Write the .vmfb; ``runtime.load(path)`` runs it with no compiler installed."""
        write_atomic(Path(path), self.executable.vmfb)


class CrossCompiled:
    """A module compiled for hardware this machine may not have: save it, load it there
    with ``runtime.load(path, device)``."""

    def __init__(self, vmfb: bytes, target: str, staged: StagedModule) -> None:
        self.vmfb, self.target, self.staged = vmfb, target, staged

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"this function is compiled for {self.target}: save() it and load "
                           "it with runtime.load(path, device) where that device exists, or "
                           "pass compile(target=..., device=...)")

    def as_text(self) -> str:
        return self.staged.text()

    def save(self, path: Any) -> None:
        write_atomic(Path(path), self.vmfb)


_DEVICE_KEY = operator.attrgetter("_key")
_TRACE_STACK = core.trace_stack  # the same list object; one global lookup on the hot path

# `disable_jit()`: per thread, whether jitted functions run their Python eagerly. The count
# of threads holding one keeps the hot path to one global read when none does.
_JIT_DISABLED: PerThreadList[bool] = PerThreadList("jit_disabled")
_DISABLING = [0]


@contextlib.contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    """``jax.disable_jit``: while held (by this thread), calling a `jit`-wrapped function
    runs its Python eagerly on concrete values -- print and step through it -- instead of
    compiling it. ``disable_jit(False)`` inside turns it back on."""
    _JIT_DISABLED.append(bool(disable))
    _DISABLING[0] += 1
    try:
        yield
    finally:
        _DISABLING[0] -= 1
        _JIT_DISABLED.pop()


# Every live jitted function, for `clear_caches`.
_LIVE: "weakref.WeakSet[Jitted]" = weakref.WeakSet()


def clear_caches() -> None:
    """``jax.clear_caches``: drop every jitted function's compiled executables from memory
    (the next call traces and compiles again; the on-disk cache is kept)."""
    for jitted in list(_LIVE):
        jitted.clear_cache()


def _fast_signature(arg: Any) -> Any:
    t = type(arg)
    if t is DeviceArray:
        return arg._key
    if t is Array or t is np.ndarray:
        return (t, arg.shape, arg.dtype)
    if t is float or t is int or t is bool or isinstance(arg, np.generic):
        return t
    return None


class Jitted(Staged):
    """The callable `jit` returns. Specializes, caches and dispatches."""

    def generate_code(self, module_name: str) -> None:
        """Its function's control flow converted (autograph/cache.py); jit(grad(f)),
        jit(vmap(f)): the inner transform's code."""
        if isinstance(self._fun, ModuleCode):
            self._fun.generate_code(module_name)
        elif getattr(self._fun, "__module__", None) == module_name:
            self._traced_fun()

    def __init__(self, fun: Callable, static_argnums: Any = (), static_argnames: Any = (),
                 device: DeviceLike = None, example_args: Optional[Sequence[Any]] = None
                 ) -> None:
        if not callable(fun):
            raise located(TypeError, f"jit expects a callable, got {type(fun).__name__}")
        functools.update_wrapper(self, fun, updated=())  # its own attributes, not fun's
        self._fun = fun
        self._device = device
        # Argument shapes for ahead-of-time builds (`transpiler build`): ShapeDtypeStructs.
        self.example_args = tuple(example_args) if example_args is not None else None
        self._static_nums, self._static_names = _static_args(fun, static_argnums, static_argnames)
        self._cache: dict[Any, Executable] = {}
        # What each compile took and why it happened (`cache_info`, the compile log).
        self._specializations: dict[Any, compile_log.Specialization] = {}
        self._labels: Optional[compile_log.ArgumentLabels] = None
        self._free_names: Optional[tuple[str, ...]] = None  # see _bindings
        # Dispatch on argument types alone: (executable, whether all args are on its device).
        self._fast: dict[Any, tuple[Executable, bool]] = {}
        self.__name__: str = getattr(fun, "__name__", type(fun).__name__)
        _LIVE.add(self)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:  # methods: bind self
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            if _TRACE_STACK:  # jit inside jit: inline into the outer trace
                return self._traced_fun()(*args, **kwargs)
            if _DISABLING[0] and _JIT_DISABLED and _JIT_DISABLED[-1]:
                return self._fun(*args, **kwargs)
            if not kwargs:
                if args and type(args[0]) is DeviceArray:
                    try:  # all DeviceArrays: their keys are precomputed
                        fast_key = tuple(map(_DEVICE_KEY, args))
                    except AttributeError:
                        fast_key = tuple(map(_fast_signature, args))
                else:  # (scalars, NumPy arrays: no exception to raise and catch)
                    fast_key = tuple(map(_fast_signature, args))
                if self._free_names:
                    fast_key += self._bindings()
                entry = self._fast.get(fast_key)
                if entry is not None:
                    cached, on_device = entry
                    return cached.call_device_arrays(args) if on_device else cached(args)
            executable, leaves, new_key = self._specialize(args, kwargs)
            if new_key is not None:
                on_device = all(type(a) is DeviceArray and (a._device is executable.device or
                                                            a._device.platform == "cpu" ==
                                                            executable.device.platform)
                                for a in args)
                self._fast[new_key] = (executable, on_device)
            return executable(leaves)
        except Exception as error:
            raise filtered(error)  # noqa: B904 (the user's frames: transpiler/tracebacks.py)

    def _split(self, args: Sequence[Any], kwargs: dict) -> tuple[Any, Any, Any]:
        statics = []
        for i in self._static_nums:
            if i >= len(args):
                continue
            statics.append((i, _hashable(args[i], f"static argument {i}", self.__name__)))
        for name in self._static_names:
            if name in kwargs:
                statics.append((name, _hashable(kwargs[name], f"static argument {name!r}",
                                                self.__name__)))
        dyn_args = tuple(a for i, a in enumerate(args) if i not in self._static_nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_names}
        return dyn_args, dyn_kwargs, tuple(statics)

    def _signature(self, args: Sequence[Any], kwargs: dict) -> tuple:
        dyn_args, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        avals = []
        for i, leaf in enumerate(leaves):
            try:
                avals.append(abstractify(leaf, i, self.__name__))
            except (TypeError, OverflowError) as err:
                raise self._not_an_array(args, i, leaf, err) from None
        return leaves, in_tree, tuple(avals), statics

    def _not_an_array(self, args: Sequence[Any], i: int, leaf: Any,
                      err: BaseException) -> BaseException:
        """Leaf `i` of the dynamic arguments is no array: an error naming the parameter
        (and the path inside it), with the hint for a method's `self` or a static value."""
        if isinstance(err, OverflowError):
            return OverflowError(f"jit({self.__name__}): argument leaf {i}: {err}")
        dyn = [(n, a) for k, (n, a) in enumerate(zip(self._param_names(len(args)), args))
               if k not in self._static_nums]  # (static names' positions are among these)
        paths = tree_util.tree_flatten_with_path(tuple(a for _, a in dyn))[0]
        where = f"leaf {i}"
        if i < len(paths):
            keys = paths[i][0]
            index = getattr(keys[0], "idx", None) if keys else None
            if index is not None and index < len(dyn):
                where = f"`{dyn[index][0]}{tree_util.keystr(keys[1:])}`"
        message = f"jit({self.__name__}): argument {where} is not an array: got " \
                  f"{type(leaf).__name__}"
        if where == "`self`":
            return located(TypeError, message, "a jitted method gets `self` as an argument: "
                           "jit a function of the arrays it uses, register the class as a "
                           "pytree (tree_util.register_pytree_node_class), or mark `self` "
                           "static with jax.jit(f, static_argnums=0) if it is hashable")
        return located(TypeError, message, "pass an array (or a pytree of arrays), or mark the "
                       "argument static (static_argnums/static_argnames) if it is "
                       "configuration")

    def _sequence_hint(self, error: BaseException, args: Sequence[Any]) -> BaseException:
        """``x ** 2`` on a list argument (a pytree of scalars to jit, as to JAX): the error
        at its line, saying so; any other error as it is."""
        sequences = [(n, a) for n, a in zip(self._param_names(len(args)), args)
                     if type(a) in (list, tuple)]
        if not (isinstance(error, TypeError) and sequences and
                str(error).startswith("unsupported operand")):
            return error
        name, value = sequences[0]
        at = [tb.tb_frame for tb in _frames(error.__traceback__)
              if not internal_file(tb.tb_frame.f_code.co_filename)]
        loc = frame_location(at[-1]) if at else user_location()
        return located_type(TypeError)(
            f"{error}: jit({self.__name__}) got `{name}` as a {type(value).__name__}, which "
            "jit (like JAX) takes as a pytree of separate values, not as one array", loc,
            f"pass jnp.asarray({name}) to make it an array")

    def _param_names(self, count: int) -> list[str]:
        try:
            params = list(inspect.signature(self._fun).parameters)
        except (TypeError, ValueError):
            params = []
        return [params[k] if k < len(params) else f"#{k}" for k in range(count)]

    def _trace(self, args: Sequence[Any], kwargs: dict, in_tree: Any,
               avals: Sequence[ShapedArray]) -> tuple[StagedModule, Any]:
        out_tree_box: list[Any] = []

        def flat_fun(*tracers: Any) -> list[Any]:
            dyn_args, dyn_kwargs = tree_util.tree_unflatten(in_tree, list(tracers))
            full_args, full_kwargs = self._merge(args, kwargs, dyn_args, dyn_kwargs)
            try:
                out = self._traced_fun()(*full_args, **full_kwargs)
            except (ValueError, TypeError) as error:
                cause = unwrapped_tracer_error(error)
                if cause is error:
                    raise self._sequence_hint(error, args) from None
                raise cause from None
            out_leaves, out_tree = tree_util.tree_flatten(out)
            out_tree_box.append(out_tree)
            return out_leaves

        staged = trace_to_module(flat_fun, avals, name="main")
        return staged, out_tree_box[0]

    def _traced_fun(self) -> Callable:
        """What is traced: `fun` with its Python ``if``/``while``/``for`` on traced values
        converted to lax control flow (transforms/autograph/convert.py), or `fun` itself when
        neither it nor a function of the user's it calls has control flow."""
        return convert_for_jit(self._fun)  # (cached there, while its globals stay bound)

    @property
    def converted_source(self) -> Optional[str]:
        """The converted Python that `jit` traces (None when `fun` is traced as it is)."""
        return getattr(self._traced_fun(), "source", None)

    def _merge(self, args: Sequence[Any], kwargs: dict, dyn_args: Sequence[Any],
               dyn_kwargs: dict) -> tuple[list, dict]:
        it = iter(dyn_args)
        full = [a if i in self._static_nums else next(it) for i, a in enumerate(args)]
        full_kwargs = {k: (v if k in self._static_names else dyn_kwargs[k])
                       for k, v in kwargs.items()}
        return full, full_kwargs

    def _specialize(self, args: Sequence[Any], kwargs: dict) -> tuple[Executable, list, Any]:
        leaves, in_tree, avals, statics = self._signature(args, kwargs)
        bindings = self._bindings()
        key = (in_tree, avals, statics, bindings)
        executable = self._cache.get(key)
        if executable is None:
            executable = self._compile(key, args, kwargs)
            self._cache[key] = executable
        fast_key = None
        if not kwargs and not statics and len(leaves) == len(args):
            fast_key = tuple(map(_fast_signature, args))
            if any(k is None for k in fast_key) or in_tree != tree_util.tree_structure(
                    (tuple(args), {})):
                fast_key = None
            elif bindings:
                fast_key += bindings
        return executable, leaves, fast_key

    def _compile(self, key: Any, args: Sequence[Any], kwargs: dict) -> Executable:
        """Trace and compile the specialization `key` of these arguments, timing both, and
        record it (`cache_info`); logged when ``config.log_compiles`` is on."""
        in_tree, avals, statics, _ = key
        if self._labels is None:
            self._labels = compile_log.ArgumentLabels(self._fun, self._static_nums,
                                                      self._static_names)
        names = self._labels.leaves(args, kwargs)
        signature = compile_log.signature(names, avals, statics, self._labels)
        with compile_log.StatusLine(f"compiling {self.__name__} {signature} ..."):
            start = time.perf_counter()
            with lapack_on_host(config.lapack_on_host):  # (in this process: LAPACK)
                staged, out_tree = self._trace(args, kwargs, in_tree, avals)
            traced = time.perf_counter()
            executable = Executable(staged, avals, out_tree, self._device)
            compiled = time.perf_counter()
        reason = compile_log.explain_miss(key, list(self._specializations), names,
                                          self._labels, self._free_names or ())
        spec = compile_log.Specialization(signature, traced - start, compiled - traced,
                                          executable.from_disk_cache, reason)
        self._specializations[key] = spec
        if config.log_compiles:
            compile_log.log_compile(self.__name__, self._fun, spec, len(self._specializations))
        return executable

    def _bindings(self) -> tuple:
        """What the globals the function reads (modules aside) are bound to now: a trace
        is made again when one is rebound (`g = 10.` after a call), as a fresh jit would
        see it -- JAX keeps the first trace's value instead."""
        if self._free_names is None:
            self._free_names = disk_cache.free_names(self._fun)
        return disk_cache.bindings(self._fun, self._free_names) if self._free_names else ()

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Stage the function for these arguments without compiling it."""
        leaves, in_tree, avals, statics = self._signature(args, kwargs)
        staged, out_tree = self._trace(args, kwargs, in_tree, avals)
        return Lowered(self, (in_tree, avals, statics), staged, avals, out_tree, in_tree)

    def cache_info(self) -> list[compile_log.Specialization]:
        """The specializations compiled so far, oldest first: each one's signature
        (``(x: float32[3], n=4)``), how long its trace and its compile took, whether the
        compile came from the disk cache, and why it was made. Our extension: JAX's
        jitted functions have no ``cache_info``."""
        return list(self._specializations.values())

    def clear_cache(self) -> None:
        """Drop this function's compiled specializations from memory (JAX's
        ``clear_cache``); the next call traces and compiles again (the disk cache is kept)."""
        self._cache.clear()
        self._fast.clear()
        self._specializations.clear()

    def __repr__(self) -> str:
        return f"<jit({self.__name__})>"


def _hashable(value: Any, what: str, fname: str) -> Any:
    try:
        hash(value)
    except TypeError:
        raise located(TypeError, f"jit({fname}): {what} must be hashable, got "
                        f"{type(value).__name__}; pass a tuple instead of a list, or make "
                        "the argument dynamic") from None
    return value


def _static_args(fun: Callable, argnums: Any, argnames: Any) -> tuple[frozenset, frozenset]:
    nums = (argnums,) if isinstance(argnums, int) else argnums
    names = (argnames,) if isinstance(argnames, str) else argnames
    if not isinstance(nums, (tuple, list)) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise located(TypeError, f"jit: static_argnums must be an int or a sequence of ints, "
                      f"got {argnums!r}", "e.g. static_argnums=1 or static_argnums=(0, 2)")
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise located(TypeError, f"jit: static_argnames must be a str or a sequence of "
                      f"strs, got {argnames!r}", "e.g. static_argnames='n' or ('n', 'mode')")
    nums, names = tuple(nums), tuple(names)
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)]
    n = len(positional)
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    if params and not varargs and any(i >= n or i < -n for i in nums):
        raise located(ValueError, f"jitted function has static_argnums={tuple(nums)}, but "
                      f"{getattr(fun, '__name__', 'it')} only accepts {n} positional "
                      f"argument{'s' if n != 1 else ''}",
                      "static_argnums count the function's positional parameters from 0")
    nums = tuple(i + n if i < 0 else i for i in nums)
    for i in nums:  # like JAX: static argnums and argnames name the same parameters
        if i < n:
            names += (positional[i],)
    for name in names:
        if params and name not in [p.name for p in params]:
            raise ValueError(f"jit: static_argnames names {name!r}, which is not a parameter "
                             f"of {getattr(fun, '__name__', fun)}")
        if name in positional:
            nums += (positional.index(name),)
    return frozenset(nums), frozenset(names)


def _frames(tb: Any) -> Iterator[Any]:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def jit(fun: Optional[Callable] = None, *, in_shardings: Any = None,
        out_shardings: Any = None, static_argnums: Any = (), static_argnames: Any = (),
        device: DeviceLike = None, backend: Optional[str] = None, donate_argnums: Any = (),
        donate_argnames: Any = (), keep_unused: bool = False, inline: bool = False,
        example_args: Optional[Sequence[Any]] = None) -> Any:
    """Compile `fun` with IREE; ``@jit`` and ``jit(f, static_argnums=...)`` both work.

    ``backend`` may be ``"cpu"`` (an IREE CPU driver); ``donate_*``, ``keep_unused`` and
    ``inline`` are accepted for JAX compatibility and do not change results (IREE manages
    buffers itself; a jit called inside another jit is always inlined). ``in_shardings``
    and ``out_shardings`` (Shardings or PartitionSpecs on the current mesh, pytree
    prefixes of the arguments and results) are checked against the arguments' shapes and
    recorded on the results (``.sharding``); the program itself runs on one device (the
    mesh is not partitioned: use `shard_map` to run per shard). ``example_args`` (our
    extension: ShapeDtypeStructs or arrays) gives the signature `transpiler build`
    compiles ahead of time."""
    if backend not in (None, "cpu"):
        raise ValueError(f"jit: backend {backend!r} is not available; use backend='cpu' or "
                         "device='local-task' | 'local-sync' | 'vulkan' | 'cuda' | 'hip'")
    if fun is None:
        return functools.partial(jit, in_shardings=in_shardings, out_shardings=out_shardings,
                                 static_argnums=static_argnums,
                                 static_argnames=static_argnames, device=device,
                                 example_args=example_args)
    if in_shardings is None and out_shardings is None:
        return at_creation(Jitted(fun, static_argnums, static_argnames, device, example_args))
    return at_creation(ShardedJitted(fun, static_argnums, static_argnames, device,
                                     example_args, in_shardings, out_shardings))


class ShardedJitted(Jitted):
    """``jit(f, in_shardings=..., out_shardings=...)``: the arguments' shapes checked
    against `in_shardings` at each new signature, the results placed by `out_shardings`
    (reshard); it computes what `jit(f)` computes, on one device."""

    def __init__(self, fun: Callable, static_argnums: Any, static_argnames: Any,
                 device: DeviceLike, example_args: Optional[Sequence[Any]],
                 in_shardings: Any, out_shardings: Any) -> None:
        super().__init__(fun, static_argnums, static_argnames, device, example_args)
        check_shardings(in_shardings, "jit: in_shardings")
        check_shardings(out_shardings, "jit: out_shardings")
        self._in_shardings, self._out_shardings = in_shardings, out_shardings

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = super().__call__(*args, **kwargs)
        return out if self._out_shardings is None else reshard(out, self._out_shardings)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """The staged program with each argument's and result's sharding on it in XLA's
        notation (``mhlo.sharding``, ``mhlo.num_partitions``): exported StableHLO that XLA's
        partitioner splits over the mesh (IREE ignores them)."""
        lowered = super().lower(*args, **kwargs)
        dyn_args, dyn_kwargs, _ = self._split(args, kwargs)
        where = f"jit({self.__name__})"
        arg_shardings = leaf_shardings(self._in_shardings, dyn_args, f"{where}: in_shardings") \
            + [None] * len(tree_util.tree_leaves(dyn_kwargs))
        outs = tree_util.tree_unflatten(lowered.out_tree, [0] * lowered.out_tree.num_leaves)
        result_shardings = leaf_shardings(self._out_shardings, outs,
                                          f"{where}: out_shardings")
        meshes = {s.mesh for s in arg_shardings + result_shardings
                  if isinstance(s, NamedSharding)}
        if len(meshes) > 1:
            raise located(ValueError, f"{where}: in_shardings and out_shardings name "
                          f"{len(meshes)} different meshes", "put every sharding on one mesh")
        if meshes:
            annotate(lowered.staged.module, lowered.staged.context, arg_shardings,
                     result_shardings, meshes.pop().size)
        return lowered

    def _specialize(self, args: Sequence[Any], kwargs: dict) -> tuple[Executable, list, Any]:
        if self._in_shardings is not None:
            dyn_args = tuple(a for i, a in enumerate(args) if i not in self._static_nums)
            check_placement(dyn_args, self._in_shardings, f"jit({self.__name__}): in_shardings")
        return super()._specialize(args, kwargs)


carries_its_function(jit)  # grad through ``f = jit(closure)``: the closure's derivative
