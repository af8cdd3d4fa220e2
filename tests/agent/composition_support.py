"""Shared pieces of the composition tests: the spec's 3-level tree and a routing model."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ptcflow import SubAgent
from ptcflow.runtime import LLMRequest
from ptcflow.testing import ScriptItem

Router = Callable[[LLMRequest], ScriptItem]


def first_user(request: LLMRequest) -> str:
    """The task prompt of a request (its first user message)."""
    return next(m.content for m in request.messages if m.role == "user")


def router(answers: Mapping[str, ScriptItem | Callable[[LLMRequest], ScriptItem]]) -> Router:
    """A scripted model answering each agent by the start of its task prompt."""

    def answer(request: LLMRequest) -> ScriptItem:
        task = first_user(request)
        for prefix, reply in answers.items():
            if task.startswith(prefix):
                return reply(request) if callable(reply) else reply
        raise AssertionError(f"no scripted answer for the task {task!r}")

    return answer


def spec_tree() -> SubAgent:
    """The spec's 3-level example: orchestrator > analyzer > classifier (bound to haiku),
    scorer (inherits), expert (its own opus)."""
    classifier = SubAgent(
        prompt="Classify {{text}}",
        signature="(text :string) -> {category :string}",
        name="classifier",
    )
    scorer = SubAgent(
        prompt="Score {{text}}", signature="(text :string) -> {score :int}", name="scorer"
    )
    expert = SubAgent(
        prompt="Expert analysis of {{text}}",
        signature="(text :string) -> {opinion :string, _notes :string}",
        name="expert",
        llm="opus",
    )
    analyzer = SubAgent(
        prompt="Analyze {{data}}",
        signature="(data :map) -> {analysis :map}",
        name="analyzer",
        tools={
            "classifier": classifier.as_tool(llm="haiku"),
            "scorer": scorer.as_tool(),
            "expert": expert.as_tool(),
        },
    )
    return SubAgent(
        prompt="Analyze the data",
        signature="{analysis :map}",
        name="orchestrator",
        tools={"analyzer": analyzer.as_tool()},
    )


SPEC_ANSWERS: dict[str, Any] = {
    "Analyze the data": '(return {:analysis (:analysis (call "analyzer" {:data {:text "hi"}}))})',
    "Analyze": '(let [t (:text ctx/data)]\n  (return {:analysis {:class (:category (call "classifier" {:text t}))\n'
    '                      :score (:score (call "scorer" {:text t}))\n'
    '                      :expert (:opinion (call "expert" {:text t}))}}))',
    "Classify": '(return {:category "greeting"})',
    "Score": "(return {:score 7})",
    "Expert": '(return {:opinion "fine" :_notes "secret notes"})',
}
