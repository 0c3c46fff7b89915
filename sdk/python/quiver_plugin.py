"""Write a Quiver plugin in Python as ordinary typed functions.

Build it into a WebAssembly component with componentize-py against Quiver's
`wit/` folder, then write its stub with `quiver package` (see Quiver's docs/src/plugin-authors/writing-a-plugin.md):

    from quiver_plugin import Tools, ToolError

    tools = Tools("stats", "0.1.0", "Statistics of lists of numbers.", categories=["math"])

    @tools.action
    def mean(numbers: list[float]) -> dict:
        '''Arithmetic mean of a list of numbers.

        Args:
            numbers: The values, at least one.
        '''
        if not numbers:
            raise ToolError.invalid_input("give at least one number")
        return {"mean": sum(numbers) / len(numbers)}

    Plugin = tools.export()   # componentize-py looks for the class `Plugin`

Each action's input schema comes from its parameters' type hints (str, int,
float, bool, None, list[T], dict[str, T], T | None, Optional[T],
Literal[...]); a parameter with a default is optional. Its description is
the docstring's first paragraph (the first line, at most 120 characters, is
the summary models see before they load the schema), and each parameter's
description comes from the docstring's `Args:` section. An author writes no
JSON Schema.

Natively (no component), the module imports stand-ins for the bindings, so
a plugin's functions, `tools.manifest()` and `tools.invoke(action, json)`
can be unit-tested with plain `python -m unittest`.

An action returns anything `json.dumps` takes. Raising `ToolError` gives the
model a typed error (invalid input, not found, denied, unavailable, failed);
any other exception becomes a `failed` error carrying its type and message.
"""

import inspect
import json
import types
import typing

try:  # inside the component: the bindings componentize-py generates
    from componentize_py_types import Err
    from wit_world import exports
    from wit_world.imports import types as wit
except ImportError:  # natively (unit tests of a plugin's functions): stand-ins
    from _quiver_native import Err, exports, wit

__all__ = ["Tools", "ToolError", "schema_of"]


class ToolError(Exception):
    """A failure the model can act on, with its kind."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message

    @classmethod
    def invalid_input(cls, message):
        """The input is wrong: the model should change it."""
        return cls(wit.Error_InvalidInput, str(message))

    @classmethod
    def not_found(cls, message):
        """What the input names does not exist."""
        return cls(wit.Error_NotFound, str(message))

    @classmethod
    def denied(cls, message):
        """Not allowed."""
        return cls(wit.Error_Denied, str(message))

    @classmethod
    def unavailable(cls, message):
        """Temporarily impossible: the model may retry later."""
        return cls(wit.Error_Unavailable, str(message))

    @classmethod
    def failed(cls, message):
        """Anything else."""
        return cls(wit.Error_Failed, str(message))


_ACCESS = {"read": wit.Access.READ, "write": wit.Access.WRITE, "admin": wit.Access.ADMIN}
_KIND = {"tool": wit.Kind.TOOL, "connector": wit.Kind.CONNECTOR, "database": wit.Kind.DATABASE}


def schema_of(hint):
    """The JSON Schema of a type hint."""
    if hint is inspect.Parameter.empty or hint is typing.Any:
        return {}
    if hint is type(None) or hint is None:
        return {"type": "null"}
    for python, json_type in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if hint is python:
            return {"type": json_type}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is tuple and args and args[-1] is not Ellipsis:
        return {"type": "array", "prefixItems": [schema_of(a) for a in args], "items": False}
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple, set, frozenset):
        schema = {"type": "array"}
        if args:
            schema["items"] = schema_of(args[0])
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin is dict or hint is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = schema_of(args[1])
        return schema
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        branches = [schema_of(a) for a in args]
        non_null = [b for b in branches if b != {"type": "null"}]
        if len(non_null) == 1 and len(branches) == 2 and "type" in non_null[0]:
            return {**non_null[0], "type": [non_null[0]["type"], "null"]}
        return {"anyOf": branches}
    raise TypeError(f"no JSON Schema for the type hint {hint!r}")


def _docstring(function):
    """(description, {parameter: description}) from a Google-style docstring:
    the paragraphs before `Args:` describe the action; under `Args:`, each
    `name: text` line (continued on deeper-indented lines) a parameter."""
    text = inspect.getdoc(function) or ""
    description, _, args = text.partition("\nArgs:\n")
    paragraphs = [" ".join(p.split()) for p in description.strip().split("\n\n") if p.strip()]
    params = {}
    current = None
    for line in args.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            break  # the next section (Returns:, Raises:, …)
        name, sep, said = line.strip().partition(":")
        if sep and name.isidentifier() and indent <= 4:
            current = name
            params[name] = said.strip()
        elif current:
            params[current] += " " + line.strip()
    return "\n\n".join(paragraphs), params


class _Action:
    def __init__(self, function, access):
        self.function = function
        self.name = function.__name__
        self.access = access
        self.signature = inspect.signature(function)
        hints = typing.get_type_hints(function)
        self.description, documented = _docstring(function)
        if not self.description:
            raise ValueError(f"action `{self.name}` has no docstring: its first line is what models see")
        properties, required = {}, []
        for name, parameter in self.signature.parameters.items():
            schema = schema_of(hints.get(name, inspect.Parameter.empty))
            if name in documented:
                schema["description"] = documented[name]
            if parameter.default is inspect.Parameter.empty:
                required.append(name)
            elif parameter.default is not None:
                schema["default"] = parameter.default
            properties[name] = schema
        self.input_schema = {"type": "object", "properties": properties, "additionalProperties": False}
        if required:
            self.input_schema["required"] = required

    def call(self, input_json):
        arguments = json.loads(input_json)
        return json.dumps(self.function(**arguments))


class Tools:
    """A plugin's actions: decorate functions with `@tools.action`."""

    def __init__(self, name, version, description, categories=(), kind="tool"):
        self.name = name
        self.version = version
        self.description = description
        self.categories = list(categories)
        self.kind = _KIND[kind]
        self.actions = {}

    def action(self, function=None, *, access="read"):
        """Make `function` an action (`@tools.action` or `@tools.action(access="write")`)."""

        def register(function):
            action = _Action(function, _ACCESS[access])
            self.actions[action.name] = action
            return function

        return register(function) if function is not None else register

    def manifest(self):
        """The manifest `describe()` returns."""
        return wit.Manifest(
            name=self.name,
            version=self.version,
            kind=self.kind,
            description=self.description,
            categories=self.categories,
            actions=[
                wit.Action(
                    name=a.name,
                    description=a.description,
                    input_schema=json.dumps(a.input_schema),
                    output_schema=None,
                    access=a.access,
                )
                for a in self.actions.values()
            ],
        )

    def invoke(self, action, input_json):
        """Run `action`: its JSON output, or `Err` with a typed error."""
        found = self.actions.get(action)
        if found is None:
            raise Err(wit.Error_NotFound(f"no action `{action}`"))
        try:
            return found.call(input_json)
        except ToolError as error:
            raise Err(error.kind(error.message))
        except Exception as error:  # the model gets the message, not a trap
            raise Err(wit.Error_Failed(f"{type(error).__name__}: {error}"))

    def export(self):
        """The class componentize-py exports (name it `Plugin` in your module)."""
        tools = self

        class Plugin(exports.Plugin):
            def describe(self):
                return tools.manifest()

            def invoke(self, action, input):
                return tools.invoke(action, input)

        return Plugin
