"""Run by the Agents SDK tests in a separate process.

    python agents_child.py run STATE BASE_URL SESSION PROMPT    Runner.run of an agent with an `add` tool
    python agents_child.py write STATE SESSION TAG N            add_items N times, one item each

The SDK is pointed at the loopback server (BASE_URL), tracing is off: nothing leaves the machine.
"""

import asyncio
import os
import sys

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from sessiondag.integrations.agents import SessiondagSession  # noqa: E402


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def run(state: str, base_url: str, sid: str, prompt: str) -> None:
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base_url, api_key="loopback", max_retries=0)
    agent = Agent(name="calc", instructions="You add numbers.", tools=[add],
                  model=OpenAIChatCompletionsModel(model="loopback-model", openai_client=client))
    session = SessiondagSession(sid, state)
    result = await Runner.run(agent, prompt, session=session)
    print(result.final_output, flush=True)
    session.close()


async def write(state: str, sid: str, tag: str, n: int) -> None:
    session = SessiondagSession(sid, state, commit_every=0)
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        await session.add_items([{"role": role, "content": f"{tag} {i}"}])
    session.close()


if __name__ == "__main__":
    if sys.argv[1] == "run":
        asyncio.run(run(*sys.argv[2:6]))
    else:
        asyncio.run(write(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
