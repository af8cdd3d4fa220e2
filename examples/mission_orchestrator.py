"""The spec's 3-level mission: who uses which model, and the nested trace.

    .venv/bin/python examples/mission_orchestrator.py

The orchestrator runs with ``llm="sonnet"``; the analyzer inherits it; the classifier is
bound to ``haiku`` at ``as_tool``; the scorer inherits ``sonnet`` through the analyzer; the
expert always uses its own ``opus``. The whole tree shares one mission: at most 3 levels
of nesting below the orchestrator and 20 model calls in all (``MissionLimits``). The
Runtime's model is scripted; it answers for every model name and records which was asked.
"""

from __future__ import annotations

import anyio

from ptcflow import MissionLimits, SubAgent, print_trace
from ptcflow.runtime import LLMRequest, Runtime, Step
from ptcflow.testing import ScriptedLLM

classifier = SubAgent(
    prompt="Classify {{text}}", signature="(text :string) -> {category :string}", name="classifier"
)
scorer = SubAgent(
    prompt="Score {{text}}", signature="(text :string) -> {score :int}", name="scorer"
)
expert = SubAgent(
    prompt="Expert analysis of {{text}}",
    signature="(text :string) -> {opinion :string}",
    name="expert",
    llm="opus",  # its own model: wins over everything
)
analyzer = SubAgent(
    prompt="Analyze {{data}}",
    signature="(data :map) -> {analysis :map}",
    name="analyzer",
    tools={
        "classifier": classifier.as_tool(llm="haiku"),  # bound
        "scorer": scorer.as_tool(),  # inherits
        "expert": expert.as_tool(),  # its own
    },
)
orchestrator = SubAgent(
    prompt="Analyze the data",
    signature="{analysis :map}",
    name="orchestrator",
    tools={"analyzer": analyzer.as_tool()},
)

ANSWERS = {
    "Analyze the data": '(return (call "analyzer" {:data {:text "The server is down"}}))',
    "Analyze": "(let [t (:text ctx/data)\n"
    '      [c s e] (pcalls #(call "classifier" {:text t}) #(call "scorer" {:text t})\n'
    '                      #(call "expert" {:text t}))]\n'
    "  (return {:analysis (merge c s e)}))",
    "Classify": '(return {:category "incident"})',
    "Score": "(return {:score 9})",
    "Expert": '(return {:opinion "page the on-call engineer"})',
}


def model(request: LLMRequest) -> str:
    """The scripted model: answers each agent by the start of its task."""
    task = next(m.content for m in request.messages if m.role == "user")
    return next(answer for prefix, answer in ANSWERS.items() if task.startswith(prefix))


async def main() -> tuple[Step, dict[str, str]]:
    """Run the mission; return its Step and the model each agent's call asked for."""
    llm = ScriptedLLM(model)
    async with Runtime(llm=llm) as rt:
        step = await rt.run(
            orchestrator, llm="sonnet", mission_limits=MissionLimits(max_depth=3, turn_budget=20)
        )
    asked = {
        next(m.content for m in r.messages if m.role == "user").split(" ")[0]: r.model
        for r in llm.requests
    }
    return step, asked


if __name__ == "__main__":
    step, asked = anyio.run(main)
    print(step.value)
    print(asked)  # {'Analyze': 'sonnet', 'Classify': 'haiku', 'Score': 'sonnet', 'Expert': 'opus'}
    print_trace(step)
