"""Drives a front snodo (compose_front, or `snodo gateway`) with the official Python
client (mcp 1.30.0): list, call, read, prompt, progress and completions through a
backend mounted under NS.

    python drive.py URL VERSION NS KIND [STEP...]

KIND: everything | py | rmcp | fs (fs: server-filesystem serving $FS_ROOT, which holds
note.txt). STEPS default to all of: list local call read prompt progress complete;
`list` expects the front's local_echo only when `local` is a step (the gateway has no
local tool). One line per check, "ok ..." or "FAIL ...", exit 1 on any failure.
"""

import asyncio
import os
import sys

import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

url, want, ns, kind = sys.argv[1:5]
only = sys.argv[5:]
tag = f"{kind}@{ns} x {want} (python)"
# mcp 1.30's ClientSession offers types.LATEST_PROTOCOL_VERSION in initialize and has no
# option for another: the module value is set to the version this run wants.
types.LATEST_PROTOCOL_VERSION = want
failed = 0

SPEC = {
    "everything": {
        "echo": ("echo", {"message": "hi"}, "Echo: hi"),
        "read": ("demo://{ns}/resource/dynamic/text/3", "Resource 3"),
        "prompt": ("args-prompt", {"city": "Paris"}, "Paris"),
        "progress": ("trigger-long-running-operation", {"duration": 1, "steps": 3}, 3),
        # (ref kind, backend name or front template, argument, value, context, values)
        "complete": [
            ("prompt", "completable-prompt", "department", "S", None, ["Sales", "Support"]),
            ("prompt", "completable-prompt", "name", "", {"department": "Engineering"}, ["Alice", "Bob", "Charlie"]),
            ("resource", "demo://{ns}/resource/dynamic/text/{resourceId}", "resourceId", "7", None, ["7"]),
        ],
    },
    "py": {
        "echo": ("echo", {"text": "hi"}, "echo: hi"),
        "read": ("note://{ns}/greeting", "hello from Python"),
        "prompt": ("greet", {"who": "Ada"}, "Ada"),
        "progress": ("count", {"steps": 3, "delay": 0.05}, 3),
        "complete": [
            ("prompt", "greet", "who", "A", None, ["Ada", "Alan"]),
            ("resource", "note://{ns}/{name}", "name", "g", None, ["greeting", "groceries"]),
        ],
    },
    "rmcp": {"echo": ("echo", {"text": "hi"}, "hi")},
    "fs": {"echo": ("read_text_file", {"path": f"{os.environ.get('FS_ROOT')}/note.txt"}, "hello from a file")},
}[kind]


def wanted(step):
    return not only or step in only


def check(cond, what):
    global failed
    if cond:
        print(f"ok   {tag}: {what}")
    else:
        failed += 1
        print(f"FAIL {tag}: {what}")


def text(r):
    return "".join(getattr(c, "text", "") for c in r.content)


async def main():
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            check(init.protocolVersion == want, f"initialize answered {init.protocolVersion}")
            n, args, out = SPEC["echo"]
            if wanted("list"):
                names = [t.name for t in (await s.list_tools()).tools]
                local = wanted("local")
                check((not local or "local_echo" in names) and f"{ns}_{n}" in names, f"list: {len(names)} tools")
            if wanted("call"):
                r = await s.call_tool(f"{ns}_{n}", args)
                check(out in text(r), f"call {ns}_{n}")
            if "read" in SPEC and wanted("read"):
                uri = SPEC["read"][0].replace("{ns}", ns)
                r = await s.read_resource(uri)
                check(SPEC["read"][1] in (r.contents[0].text or "") and str(r.contents[0].uri) == uri, f"read {uri}")
            if "prompt" in SPEC and wanted("prompt"):
                n, args, out = SPEC["prompt"]
                r = await s.get_prompt(f"{ns}_{n}", args)
                check(out in str(r.messages), f"prompt {ns}_{n}")
            if "progress" in SPEC and wanted("progress"):
                n, args, count = SPEC["progress"]
                seen = []

                async def on_progress(p, total, message):
                    seen.append(p)

                r = await s.call_tool(f"{ns}_{n}", args, progress_callback=on_progress)
                check(not r.isError and len(seen) == count, f"progress {seen} relayed from {ns}_{n}")
            for ref_kind, name, arg, value, context, values in SPEC.get("complete", []) if wanted("complete") else []:
                if ref_kind == "prompt":
                    ref = types.PromptReference(type="ref/prompt", name=f"{ns}_{name}")
                else:
                    ref = types.ResourceTemplateReference(type="ref/resource", uri=name.replace("{ns}", ns))
                r = await s.complete(ref, {"name": arg, "value": value}, context_arguments=context)
                got = r.completion.values
                where = getattr(ref, "name", None) or ref.uri
                check(got == values, f"complete {where} {arg}={value!r}{f' (context {context})' if context else ''}: {got}")


try:
    asyncio.run(main())
except Exception as e:  # noqa: BLE001
    failed += 1
    print(f"FAIL {tag}: {type(e).__name__}: {e}")
sys.exit(1 if failed else 0)
