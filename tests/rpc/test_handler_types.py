"""What a handler takes is typed from rpc_schema/ (daemon/scripts/gen_handler_types.py →
rpc/handler_types.py; docs/architecture.md "Type checking"): the generated module is current, each
method's TypedDict names exactly the params its schema names (an optional one readable as None, as
rpc/params.py hands it over), and every handler of the method table is annotated with its own
method's Params, so mypy checks each key a handler reads against that method's schema. The wire rows
built below rpc/ (core/wire_types.py, the same script) are current too, the client's TypedDicts key for
key, and they are the rows store/, context/ and sync/ build."""

from __future__ import annotations

import ast
import importlib.util
import typing
from pathlib import Path

import sessiondag
from sessiondag.cli import serve  # noqa: F401 - imports every method module (fills METHODS)
from sessiondag.context import ledger
from sessiondag.core import wire_types
from sessiondag.rpc import handler_types, params, schema
from sessiondag.rpc.registry import METHODS
from sessiondag.store import listing, session_handle
from sessiondag.sync import pull, push
from sessiondag_client.wire import protocol as wp

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "daemon" / "scripts" / "gen_handler_types.py"
RPC = Path(sessiondag.__file__).parent / "rpc"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_handler_types", GEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pascal(method: str) -> str:
    return _generator()._gen_wire().pascal(method)


def test_the_generated_module_is_current():
    gen = _generator()
    assert Path(gen.OUT) == RPC / "handler_types.py"
    assert (RPC / "handler_types.py").read_text(encoding="utf-8") == gen.handler_types(), (
        "rpc/handler_types.py drifted from rpc_schema/: run `python daemon/scripts/gen_handler_types.py`")


def test_the_generated_wire_rows_are_current():
    gen = _generator()
    assert Path(gen.WIRE_OUT) == RPC.parent / "core" / "wire_types.py"
    assert (RPC.parent / "core" / "wire_types.py").read_text(encoding="utf-8") == gen.wire_types(), (
        "core/wire_types.py drifted from rpc_schema/: run `python daemon/scripts/gen_handler_types.py`")


def _typed_dicts(module) -> dict[str, type]:
    return {n: t for n, t in vars(module).items() if typing.is_typeddict(t) and t.__module__ == module.__name__}


def test_the_wire_rows_are_the_clients_types_key_for_key():
    rows = _typed_dicts(wire_types)
    assert {"SessionSummary", "SessionHandle", "OneRowOfSessionUsage", "UsageTotalsOfASetOfLlmCalls",
            "SessionPushResult", "SessionPullResult"} <= set(rows)
    for name, td in rows.items():
        client = getattr(wp, name)
        assert set(td.__annotations__) == set(client.__annotations__), name
        assert td.__required_keys__ == client.__required_keys__, name
        for key, ann in td.__annotations__.items():   # unevaluated: the text, Any written as object
            mine = ann.__forward_arg__ if isinstance(ann, typing.ForwardRef) else str(ann)
            theirs = client.__annotations__[key]
            theirs = theirs.__forward_arg__ if isinstance(theirs, typing.ForwardRef) else str(theirs)
            assert mine == theirs.replace("Any", "object"), (name, key, mine, theirs)


def test_the_layers_below_rpc_build_the_generated_rows():
    assert listing.SessionRow is wire_types.SessionSummary
    assert session_handle.HandleDict is wire_types.SessionHandle
    assert session_handle.UsageDict is wire_types.SessionHandleUsageTotal
    assert ledger.UsageRow is wire_types.OneRowOfSessionUsage
    assert ledger.UsageTotals is wire_types.UsageTotalsOfASetOfLlmCalls
    for module, fn, td in ((push, push.push, wire_types.SessionPushResult), (pull, pull.pull, wire_types.SessionPullResult),
                           (pull, pull.clone, wire_types.SessionPullResult)):
        ann = fn.__annotations__["return"]     # unevaluated (the module's own type-only imports)
        assert eval(ann, vars(module)) is td, (fn.__qualname__, ann)


def test_the_check_mode_tells_a_drifted_module(tmp_path, monkeypatch):
    gen = _generator()
    stale = tmp_path / "handler_types.py"
    stale.write_text(gen.handler_types() + "# edited by hand\n", encoding="utf-8")
    monkeypatch.setattr(gen, "OUT", str(stale))
    monkeypatch.setattr(gen, "WIRE_OUT", str(tmp_path / "wire_types.py"))
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0


def test_each_request_typeddict_has_its_schemas_params():
    for m in sorted(schema.request_methods()):
        td = getattr(handler_types, _pascal(m) + "Params")
        ps = schema.params_schema(m)
        names = set(ps.get("properties", {}))
        assert set(td.__annotations__) == names, m
        assert td.__required_keys__ == frozenset(names), m   # absent reads as None: every key readable
        for n in names - set(ps.get("required", [])):   # annotations unevaluated (`wp` is the type checker's)
            ann = td.__annotations__[n]
            text = ann.__forward_arg__ if isinstance(ann, typing.ForwardRef) else str(ann)
            assert "None" in [part.strip() for part in text.split("|")] or text == "object", (m, n, text)


def test_an_absent_optional_param_reads_as_none_as_typed():
    checked = params.check("session/get_branch", {"session_id": "s1"})
    for n in ("head_id", "limit", "before", "after", "order"):
        assert n in handler_types.SessionGetBranchParams.__annotations__
        assert checked[n] is None and n not in checked


def _handlers() -> dict[str, tuple[str, ast.expr | None]]:
    """method name -> (module, the annotation of its handler's params), from the source."""
    found = {}
    for path in sorted(RPC.glob("*.py")):
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for d in n.decorator_list:
                if (isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "method"
                        and d.args and isinstance(d.args[0], ast.Constant)):
                    found[d.args[0].value] = (path.name, n.args.args[1].annotation)
    return found


def test_every_handler_takes_its_own_methods_params():
    handlers = _handlers()
    assert set(handlers) == set(METHODS), "a handler registered outside a @method(\"…\") of rpc/"
    wrong = []
    for m, (module, ann) in sorted(handlers.items()):
        want = f"ht.{_pascal(m)}Params"
        if ann is None or ast.unparse(ann) != want:
            wrong.append(f"{module}: {m} takes {ast.unparse(ann) if ann else 'no annotation'}, not {want}")
    assert not wrong, "\n".join(wrong)
