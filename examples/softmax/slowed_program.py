"""Not a candidate: what the hostile candidates `bad_slows_reference_compile*.py` beside it do to
the reference's program once kgate has lowered it, on its way through the compiler.

`slowed(module)`: a StableHLO module whose public `main` takes one array and returns one of the
same type comes back with that `main` made a private body, called COPIES times in a chain (each
call's input is `x + 0 * previous result`): bit for bit the same answer, COPIES times the work.
Any other module (or one the rewrite cannot parse back) comes back unchanged: `slowed(m) is m`.
"""

import re

from jax._src.lib.mlir import ir

COPIES = 30
_MAIN = re.compile(r"func\.func public @main\((%arg0): (tensor<[^>]*>)\) -> \((tensor<[^>]*>) \{[^}]*\}\)")


def slowed(module):
    text = module.operation.get_asm(enable_debug_info=False)
    found = _MAIN.search(text)
    if found is None or found.group(2) != found.group(3):
        return module
    arg, kind = found.group(1), found.group(2)
    text = text.replace(found.group(0), f"func.func private @body({arg}: {kind}) -> {kind}")
    chain = [f"  func.func public @main(%arg0: {kind}) -> ({kind} {{jax.result_info = \"result\"}}) {{",
             f"    %zero = stablehlo.constant dense<0.000000e+00> : {kind}",
             f"    %r0 = func.call @body(%arg0) : ({kind}) -> {kind}"]
    for i in range(1, COPIES):
        chain += [f"    %z{i} = stablehlo.multiply %r{i - 1}, %zero : {kind}",
                  f"    %x{i} = stablehlo.add %arg0, %z{i} : {kind}",
                  f"    %r{i} = func.call @body(%x{i}) : ({kind}) -> {kind}"]
    chain += [f"    return %r{COPIES - 1} : {kind}", "  }"]
    end = text.rstrip().rfind("}")  # the module's closing brace
    try:
        return ir.Module.parse(text[:end] + "\n".join(chain) + "\n}\n", context=module.context)
    except Exception:  # a module this simple rewrite cannot handle: left alone
        return module
