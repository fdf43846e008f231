"""Request params checked against rpc_schema/: one validator per method, compiled once (jsonschema-rs:
about 1–3 µs a request on the build machine, where fastjsonschema took 4–18 µs and jsonschema
30–320 µs for the same params; values the schema does not constrain, e.g. a node's output, are not
even converted, so a big payload costs nothing more).

Every request's params pass `check(method, params)` before its handler runs; the handler then reads
plain dict keys. Rules, the same for every method:

- `null` counts as absent for a param whose schema does not accept null (the key is dropped), so a
  client may send `{"head_id": null}` for "no head_id"; where null means something (`name` of
  session/name_branch, `output` of session/update) it is passed on.
- A params object the schema refuses is -32602 `invalid_params`, its message naming the param
  (`param 'limit': 0 is less than the minimum of 1`, `missing param 'node_id'`, `unknown params:
  ['bogus']`) and `data.param` the path of the first offending value (e.g. `content.attachments.0.name`).
- Two params keep the typed errors of the model that owns them: a `session_id` string that is not a
  session id is `invalid_session_id`, a `node` object that is not a node is `invalid_node` (when the
  rest of the params fit).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, cast

import jsonschema_rs

from ..core.errors import InvalidNodeError
from ..core.ids import check_session_id
from ..core.model import Call
from . import schema
from .invalid_params import InvalidParams

MAX_MESSAGE = 300  # characters of a validator's message kept (it may quote the whole offending value)


# param -> (the type the model judges, its check raising the model's typed error); a check takes a value of
# its own type (tested with isinstance first), which one type for the table cannot say: Any
DOMAIN: dict[str, tuple[type, Callable[[Any], object]]] = {"session_id": (str, check_session_id),
                                                        "node": (dict, Call.from_dict)}


class Params(dict[str, object]):
    """Checked params: an absent param reads as None (`p["head_id"]`); `in` still tells absent from null."""

    __slots__ = ()

    def __missing__(self, key: str) -> None:
        return None


class MethodParams:
    """The compiled validator of one method's params."""

    __slots__ = ("method", "validator", "names", "required", "nullable", "integers")

    def __init__(self, method: str, params_schema: dict[str, Any]):
        self.method = method
        self.validator = jsonschema_rs.validator_for(params_schema)
        props = params_schema.get("properties", {})
        self.names = set(props)
        self.required = list(params_schema.get("required", []))
        # JSON Schema counts 5.0 as an integer: such a value is passed on as the int it is
        self.integers = [n for n, s in props.items() if isinstance(s, dict) and s.get("type") == "integer"]
        defs = {"$defs": params_schema.get("$defs", {})}
        self.nullable = {n for n, s in props.items()
                         if jsonschema_rs.validator_for({**defs, **s} if isinstance(s, dict) else s).is_valid(None)}

    def check(self, params: dict[str, object]) -> dict[str, object]:
        """`params` (nulls of non-nullable params dropped) if they fit, else the typed error."""
        if not params and not self.required:  # daemon/ping, daemon/status …: nothing to check
            return Params()
        if None in params.values():
            params = {k: v for k, v in params.items() if v is not None or k in self.nullable or k not in self.names}
        if self.validator.is_valid(params):
            out = Params(params)
            if self.integers:
                for n in self.integers:
                    if type(out.get(n)) is float:
                        out[n] = int(cast(float, out[n]))
            return out
        raise self._error(params)

    def _error(self, params: dict[str, object]) -> Exception:
        unknown = sorted(set(params) - self.names)
        if unknown:
            return InvalidParams(f"unknown params: {unknown}", param=unknown[0])
        missing = [n for n in self.required if n not in params]
        if missing:
            return InvalidParams(f"missing param {missing[0]!r}", param=missing[0])
        errors = sorted(self.validator.iter_errors(params), key=lambda e: list(map(str, e.instance_path)))
        outside = [e for e in errors if not self._domain(e, params)]
        if not outside:  # only a session_id / node the model can judge: its own typed error
            name = str(errors[0].instance_path[0])
            DOMAIN[name][1](params[name])
            if name == "node":
                return InvalidNodeError(f"node: {errors[0].message}")
            return InvalidParams(f"param {name!r}: {errors[0].message}", param=name)
        e = _specific(outside[0])
        path = ".".join(map(str, e.instance_path))
        message = e.message if len(e.message) <= MAX_MESSAGE else e.message[:MAX_MESSAGE] + "…"
        return InvalidParams(f"param {path!r}: {message}", param=path)

    @staticmethod
    def _domain(e: jsonschema_rs.ValidationError, params: dict[str, object]) -> bool:
        path = e.instance_path
        if not path or path[0] not in DOMAIN:
            return False
        typ = DOMAIN[path[0]][0]
        return isinstance(params.get(path[0]), typ)


def _specific(e: jsonschema_rs.ValidationError) -> jsonschema_rs.ValidationError:
    """The deepest error under a oneOf/anyOf (which alternative was meant and what it lacks)."""
    subs = [x for group in getattr(e.kind, "context", None) or () for x in group]
    if not subs:
        return e
    deepest = max(subs, key=lambda x: len(x.instance_path))
    return _specific(deepest) if len(deepest.instance_path) > len(e.instance_path) else e


@lru_cache(maxsize=4)
def compiled(schema_dir: str = schema.SCHEMA_DIR) -> dict[str, MethodParams]:
    """Every request method's validator (built once, when the daemon starts serving)."""
    return {m: MethodParams(m, schema.params_schema(m, schema_dir)) for m in sorted(schema.request_methods(schema_dir))}


_COMPILED: dict[str, MethodParams] = {}


def check(method: str, params: dict[str, object]) -> dict[str, object]:
    """The params of a request to `method`, checked (a method rpc_schema lacks passes unchecked)."""
    v = _COMPILED.get(method) or _compile(method)
    return Params(params) if v is None else v.check(params)


def _compile(method: str) -> MethodParams | None:
    """`method`'s validator, built at its first request (None: not a request of rpc_schema, never
    kept, so unknown names a client sends cost no memory). A private `serve --stdio` child answers a
    handful of methods: building all of them would delay its first answer (tens of ms)."""
    if method not in _requests():
        return None
    v = _COMPILED[method] = MethodParams(method, schema.params_schema(method))
    return v


@lru_cache(maxsize=1)
def _requests() -> frozenset[str]:
    return frozenset(schema.request_methods())


def warm() -> None:
    """Every method's validator, built now (a socket/TCP daemon, before it listens: no first request
    of a method pays for its validator)."""
    _COMPILED.update(compiled())
