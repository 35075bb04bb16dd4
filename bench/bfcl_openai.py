"""BFCL's function docs as OpenAI tools, as bfcl_eval's own OpenAI completions handler converts
them (its convert_to_tool and _cast_to_openai_type, which sit in a module that needs the whole
bfcl_eval dependency tree): "." in a name becomes "_", BFCL's types become OpenAPI's by
bfcl_eval's own table, a float gets format "float" and says so in its description."""
import copy
import re

from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI


def cast_types(properties):
    for value in properties.values():
        kind = value.get("type")
        if kind == "float":
            value["format"] = "float"
            value["description"] = value.get("description", "") + " This is a float type value."
        value["type"] = GORILLA_TO_OPENAPI.get(kind, "string") if kind else "string"
        if value["type"] in ("array", "object"):
            if "properties" in value:
                cast_types(value["properties"])
            elif "items" in value:
                items = value["items"]
                items["type"] = GORILLA_TO_OPENAPI[items["type"]]
                if items["type"] == "array" and "items" in items:
                    items["items"]["type"] = GORILLA_TO_OPENAPI[items["items"]["type"]]
                elif items["type"] == "object" and "properties" in items:
                    cast_types(items["properties"])
    return properties


def bfcl_tools(functions):
    tools = []
    for function in copy.deepcopy(functions):
        function["name"] = re.sub(r"\.", "_", function["name"])
        function["parameters"]["type"] = "object"
        cast_types(function["parameters"]["properties"])
        tools.append({"type": "function", "function": function})
    return tools
