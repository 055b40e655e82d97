"""The type stubs python/acl-stubs/ (PEP 561, stub-only) cannot drift from the module: each stub parses,
acl, acl.rt and acl.util define exactly the stubs' public names, every stub's parameters are the
ones the function's docstring names (positional-only, in the same order, optional where the
docstring brackets them), its return shape has the docstring's arity, and the module's argument
parser accepts exactly the stub's number of arguments."""
import ast
import os
import re

import pytest

import acl
import acl.rt
import acl.util

STUBS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "acl-stubs")
MODULES = {"acl": ("__init__.pyi", acl), "acl.rt": ("rt.pyi", acl.rt), "acl.util": ("util.pyi", acl.util)}


def stub_tree(name):
    with open(os.path.join(STUBS, MODULES[name][0])) as f:
        return ast.parse(f.read(), filename=MODULES[name][0], feature_version=(3, 8))


def stub_functions(name):
    return {n.name: n for n in stub_tree(name).body if isinstance(n, ast.FunctionDef)}


def stub_public_names(name):
    """What a type checker sees as the stub's public names: its functions, classes and assignments not
    starting with "_", and the imports written `import x as x` (PEP 484: only those re-export)."""
    names = set()
    for node in stub_tree(name).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.asname == a.name)
    return {n for n in names if not n.startswith("_")}


def module_public_names(name):
    return {n for n in dir(MODULES[name][1]) if not n.startswith("_")}


def doc_signature(func):
    """(parameter names, optional flags, return text) from the first docstring line `name(a, [b]) -> ret`."""
    m = re.fullmatch(rf"{func.__name__}\((.*?)\) -> (.+)", func.__doc__.splitlines()[0])
    assert m, func.__doc__
    # "data: bytes" names the parameter data.
    params = [p.split(":")[0].strip() for p in m.group(1).replace("[", "").replace("]", "").split(",") if p.strip()]
    optional = [p.strip().startswith("[") for p in m.group(1).split(",") if p.strip()]
    return params, optional, m.group(2)


def top_level_items(text):
    """The comma-separated items of "(a, {b, c}, d)" at the outermost level: ["a", "{b, c}", "d"]."""
    depth, items, cur = 0, [], ""
    for ch in text[1:-1]:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return items + [cur.strip()]


def all_functions():
    return [(name, fn) for name in MODULES for fn in stub_functions(name)]


@pytest.mark.parametrize("name", MODULES)
def test_each_stub_parses(name):
    assert stub_tree(name).body


@pytest.mark.parametrize("name", MODULES)
def test_stubs_and_module_have_the_same_public_names(name):
    stub, module = stub_public_names(name), module_public_names(name)
    assert (sorted(module - stub), sorted(stub - module)) == ([], []), "(missing in the stub, missing in the module)"


def test_every_function_has_a_stub():
    # The check above in numbers: the whole binding, as docs/python.md section 3 lists it.
    functions = {n for name in MODULES for n in module_public_names(name) if callable(getattr(MODULES[name][1], n))}
    assert len(functions) == sum(len(stub_functions(name)) for name in MODULES) == 94


@pytest.mark.parametrize("name, fn", all_functions())
def test_stub_parameters_are_the_docstrings(name, fn):
    stub = stub_functions(name)[fn]
    func = getattr(MODULES[name][1], fn)
    params, optional, _ = doc_signature(func)
    args = stub.args
    # METH_VARARGS functions take positional arguments only.
    assert not args.args and not args.kwonlyargs and args.vararg is None and args.kwarg is None
    assert [a.arg for a in args.posonlyargs] == params
    n_defaults = len(args.defaults)
    assert [i >= len(params) - n_defaults for i in range(len(params))] == optional
    for a in args.posonlyargs:
        assert a.annotation is not None, f"{fn}({a.arg}) has no type"


@pytest.mark.parametrize("name, fn", all_functions())
def test_stub_return_has_the_docstrings_shape(name, fn):
    stub = stub_functions(name)[fn]
    _, _, returns = doc_signature(getattr(MODULES[name][1], fn))
    ann = stub.returns
    assert ann is not None
    is_tuple = isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "Tuple"
    if returns.startswith("("):
        items = top_level_items(returns)
        assert is_tuple and len(ann.slice.elts) == len(items), ast.unparse(ann)
        if items[-1] == "ret":  # the aclError comes last, an int
            assert ast.unparse(ann.slice.elts[-1]) == "int"
    else:
        assert not is_tuple
        if returns == "ret":
            assert ast.unparse(ann) == "int"


@pytest.mark.parametrize("name, fn", all_functions())
def test_parser_accepts_exactly_the_stubs_arity(name, fn):
    # Too many or too few arguments fail in the parser, before any library call.
    func = getattr(MODULES[name][1], fn)
    args = stub_functions(name)[fn].args
    most = len(args.posonlyargs)
    least = most - len(args.defaults)
    bad_counts = [most + 1] + ([least - 1] if least > 0 else [])
    for n in bad_counts:
        with pytest.raises(TypeError) as e:
            func(*[0] * n)
        assert str(e.value) == f"{name}.{fn} args parse failed"
