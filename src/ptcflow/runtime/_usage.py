"""Budgets of a run in tokens, requests, tool calls and money: :class:`UsageLimits`.

``rt.run(strategy, input, usage_limits=UsageLimits(max_total_tokens=20_000))`` gives the
run a :class:`UsageMeter`; every child run it starts (an agent used as a tool, a
``RunChild``, concurrent ones included) shares it, as a mission shares its turn budget.
The local driver asks the meter before it performs a model call or a tool call (the
request and tool-call budgets) and tells it each model response (tokens and cost); a
budget passed cancels the run with an ``usage_limit_exceeded`` error naming the budget,
what was used and what was allowed. Strategies never see the meter: they get the error as
they get a cancellation.
"""

from __future__ import annotations

import math
from typing import Any, Final

import msgspec

from ptcflow.directives import LLMGenerate, ToolExec
from ptcflow.errors import ConfigError
from ptcflow.providers import PriceTable
from ptcflow.signals import USAGE, Err, ErrorEnvelope, Ok, Usage, UsageData, UsageSpent

__all__ = (
    "NO_LIMITS",
    "PRICE_UNKNOWN",
    "USAGE_LIMIT_EXCEEDED",
    "RunCost",
    "UsageLimits",
    "UsageMeter",
    "account",
    "admit",
    "admit_subcall",
    "cost_attributes",
)

USAGE_LIMIT_EXCEEDED: Final = "usage_limit_exceeded"
"""The error type of a run that passed one of its :class:`UsageLimits`."""

_MTOK: Final = 1_000_000.0
_NO_USAGE: Final = Usage()
_NEVER: Final = 1 << 62
"""A count bound no run reaches: the bound of a limit not set."""

PRICE_UNKNOWN: Final = "price_unknown"
"""The error type of a run with a ``max_cost_usd`` budget that called a model with no price."""


class UsageLimits(msgspec.Struct, frozen=True, kw_only=True, repr_omit_defaults=True):
    """What a run (and every child run it starts) may use, all together.

    A limit left out (``None``) is not checked. Tokens are the providers' counts (cache
    reads and writes are part of the input tokens they report); a request is one model
    call (its retries included); a tool call is one tool performed (a ``ToolExec`` or a
    program's ``(call ...)``); the cost is priced per response (see docs/controls.md).

    Args:
        max_input_tokens: input tokens of all model calls.
        max_output_tokens: output tokens of all model calls.
        max_total_tokens: input plus output tokens.
        max_requests: model calls; the call that would pass it is not made.
        max_tool_calls: tool calls; the call that would pass it is not made.
        max_cost_usd: US dollars; needs a price for every model called (a model with
            none ends the run with ``price_unknown``, never counted as free).

    Raises:
        ConfigError: a limit that is not a positive number (an int for the counts).

    Example:
        >>> UsageLimits(max_requests=3, max_cost_usd=0.5)
        UsageLimits(max_requests=3, max_cost_usd=0.5)
        >>> UsageLimits(max_total_tokens=0)
        Traceback (most recent call last):
        ...
        ptcflow.errors.ConfigError: UsageLimits.max_total_tokens must be an int >= 1 or None, got 0
    """

    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_total_tokens: int | None = None
    max_requests: int | None = None
    max_tool_calls: int | None = None
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        for field in self.__struct_fields__:
            value = getattr(self, field)
            if value is None:
                continue
            if field == "max_cost_usd":
                if (
                    isinstance(value, bool)
                    or not isinstance(value, int | float)
                    or not math.isfinite(value)
                    or value <= 0
                ):
                    raise ConfigError(
                        f"UsageLimits.max_cost_usd must be a number of US dollars > 0 or None, "
                        f"got {value!r}"
                    )
            elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"UsageLimits.{field} must be an int >= 1 or None, got {value!r}")

    @property
    def checks_tokens(self) -> bool:
        """True when a token or cost limit is set (responses must be counted)."""
        return (
            self.max_input_tokens is not None
            or self.max_output_tokens is not None
            or self.max_total_tokens is not None
            or self.max_cost_usd is not None
        )


NO_LIMITS: Final = UsageLimits()
"""No budget: the limits of a meter that only counts (a run that may pause journals what
its tree used, for the budget of a resume)."""


def exceeded(budget: str, used: Any, allowed: Any, detail: str = "") -> Err:
    """The error of a run past ``budget``: what was used and what was allowed."""
    return Err(
        error=ErrorEnvelope.make(
            USAGE_LIMIT_EXCEEDED,
            f"the run's usage limit {budget}={allowed} was exceeded: {used} used{detail} "
            f"(every run of the mission counts). Raise UsageLimits({budget}=...) or give "
            "the agent less to do",
            {"budget": budget, "used": used, "allowed": allowed},
            retryable=False,
        )
    )


_Bounds = tuple[bool, int, int, int, int, int, float]
_BOUNDS: dict[UsageLimits, _Bounds] = {}
"""The bounds of recent limits (a Runtime's budget is the same object run after run)."""


def _bounds(limits: UsageLimits) -> _Bounds:
    """``limits`` as a :class:`UsageMeter` compares counts with them (remembered)."""
    found = (
        limits.checks_tokens,
        _NEVER if limits.max_requests is None else limits.max_requests,
        _NEVER if limits.max_tool_calls is None else limits.max_tool_calls,
        _NEVER if limits.max_input_tokens is None else limits.max_input_tokens,
        _NEVER if limits.max_output_tokens is None else limits.max_output_tokens,
        _NEVER if limits.max_total_tokens is None else limits.max_total_tokens,
        math.inf if limits.max_cost_usd is None else float(limits.max_cost_usd),
    )
    if len(_BOUNDS) >= 256:  # bounded: limits made per run are not all kept
        _BOUNDS.clear()
    _BOUNDS[limits] = found
    return found


class UsageMeter:
    """What a run and its children have used, against their :class:`UsageLimits`.

    One meter per run started with ``usage_limits=`` (shared by its child runs). All
    methods are synchronous: the runs sharing it are on one event loop.

    Args:
        limits: the budgets.
        tally: count tokens even without a token or cost limit, and the tokens of each
            model with no price (a run that may pause journals them: :meth:`spent`).

    Attributes:
        requests: model calls started.
        tool_calls: tool calls started.
        usage: tokens of the answered model calls.
        cost_usd: dollars of the priced calls.
        unpriced: models called that have no price (their cost is unknown).
        unpriced_usage: the tokens of each of them (counted by a ``tally`` meter).
        carried: True once it counts what a paused tree had used (:meth:`carry`).
        request_bound: ``max_requests`` (a count no run reaches when not set): a call
            while ``requests`` is below it is within the budget.
        tool_call_bound: ``max_tool_calls`` likewise.

    Example:
        >>> m = UsageMeter(UsageLimits(max_requests=1))
        >>> m.admit_request() is None, m.admit_request().error.details["budget"]
        (True, 'max_requests')
    """

    __slots__ = (
        "_input",
        "_max_cost",
        "_max_input",
        "_max_output",
        "_max_total",
        "_output",
        "_read",
        "_write",
        "carried",
        "checks_tokens",
        "cost_usd",
        "limits",
        "request_bound",
        "requests",
        "tool_call_bound",
        "tool_calls",
        "unpriced",
        "unpriced_usage",
    )

    def __init__(self, limits: UsageLimits, *, tally: bool = False) -> None:
        self.limits = limits
        found = _BOUNDS.get(limits)
        if found is None:
            found = _bounds(limits)
        # The limits as bounds that are always compared (a limit not set: one no count
        # reaches), so a call within them is told by comparisons alone; checks_tokens:
        # whether responses are counted (a token or cost limit is set).
        (
            self.checks_tokens,
            self.request_bound,
            self.tool_call_bound,
            self._max_input,
            self._max_output,
            self._max_total,
            self._max_cost,
        ) = found
        self.requests = 0
        self.tool_calls = 0
        self._input = self._output = self._read = self._write = 0
        self.cost_usd = 0.0
        self.unpriced: set[str] = set()
        self.unpriced_usage: dict[str, Usage] | None = None
        self.carried = False
        if tally:
            self.checks_tokens = True
            self.unpriced_usage = {}

    @property
    def usage(self) -> Usage:
        """Tokens of the answered model calls."""
        return Usage(
            input_tokens=self._input,
            output_tokens=self._output,
            cache_read_tokens=self._read,
            cache_write_tokens=self._write,
        )

    def __repr__(self) -> str:
        return (
            f"<UsageMeter requests={self.requests} tool_calls={self.tool_calls} "
            f"tokens={self._input + self._output} cost_usd={self.cost_usd:.6f}>"
        )

    def admit_request(self) -> Err | None:
        """Count a model call about to start; the error when it would pass ``max_requests``."""
        allowed = self.limits.max_requests
        if allowed is not None and self.requests >= allowed:
            return exceeded("max_requests", self.requests + 1, allowed, " (this call)")
        self.requests += 1
        return None

    def admit_tool_call(self) -> Err | None:
        """Count a tool call about to start; the error when it would pass ``max_tool_calls``."""
        allowed = self.limits.max_tool_calls
        if allowed is not None and self.tool_calls >= allowed:
            return exceeded("max_tool_calls", self.tool_calls + 1, allowed, " (this call)")
        self.tool_calls += 1
        return None

    def charge(self, model: str, usage: Usage, cost: float | None) -> Err | None:
        """Count a model response (its cost: ``None`` when unknown); the error of the
        first budget it passes (``None``: none)."""
        self._input = inp = self._input + usage.input_tokens
        self._output = out = self._output + usage.output_tokens
        if usage.cache_read_tokens or usage.cache_write_tokens:
            self._read += usage.cache_read_tokens
            self._write += usage.cache_write_tokens
        if cost is None:
            self.unpriced.add(model)
            if self.unpriced_usage is not None:
                self.unpriced_usage[model] = self.unpriced_usage.get(model, _NO_USAGE) + usage
            if self.limits.max_cost_usd is not None:
                return self._past(model, inp, out, cost)
        else:
            self.cost_usd += cost
        if (
            inp > self._max_input
            or out > self._max_output
            or inp + out > self._max_total
            or self.cost_usd > self._max_cost
        ):
            return self._past(model, inp, out, cost)
        return None

    def _past(self, model: str, inp: int, out: int, cost: float | None) -> Err:
        """The error of a response that passed a budget (:meth:`charge`), in the order
        the budgets are checked."""
        lim = self.limits
        if lim.max_input_tokens is not None and inp > lim.max_input_tokens:
            return exceeded("max_input_tokens", inp, lim.max_input_tokens)
        if lim.max_output_tokens is not None and out > lim.max_output_tokens:
            return exceeded("max_output_tokens", out, lim.max_output_tokens)
        if lim.max_total_tokens is not None and inp + out > lim.max_total_tokens:
            return exceeded("max_total_tokens", inp + out, lim.max_total_tokens)
        assert lim.max_cost_usd is not None
        if cost is None:
            return self._price_unknown(model)
        return exceeded("max_cost_usd", round(self.cost_usd, 9), lim.max_cost_usd, " US dollars")

    def _price_unknown(self, model: str, before: str = "") -> Err:
        """The error of a cost budget and a model with no price (``before``: its calls were
        made before the run paused)."""
        return Err(
            error=ErrorEnvelope.make(
                PRICE_UNKNOWN,
                f"the run has a cost budget (max_cost_usd={self.limits.max_cost_usd}) but "
                f"model {model!r}{before} has no price, so its cost is unknown (not counted "
                "as free). Give it one: Runtime(prices={" + repr(model) + ": "
                "ModelPrice(input_per_mtok=..., output_per_mtok=...)})",
                {"budget": "max_cost_usd", "model": model},
                retryable=False,
            )
        )

    def spent(self) -> UsageSpent:
        """What was counted so far, as a paused run journals it (``ai.request.paused``)."""
        return UsageSpent(
            requests=self.requests,
            tool_calls=self.tool_calls,
            usage=self.usage,
            cost_usd=self.cost_usd,
            unpriced=dict(self.unpriced_usage or {}),
        )

    def carry(self, spent: UsageSpent, prices: PriceTable | None) -> Err | None:
        """Count what the tree had used before it paused (``spent``, from its journal);
        the error when that passes a budget already (``None``: it does not). The tokens of
        models that had no price are priced with ``prices`` (the resumed run's); with a
        cost budget, a model still without one is the ``price_unknown`` error."""
        self.add_counts(requests=spent.requests, tool_calls=spent.tool_calls)
        used = spent.usage
        self._input += used.input_tokens
        self._output += used.output_tokens
        self._read += used.cache_read_tokens
        self._write += used.cache_write_tokens
        self.cost_usd += spent.cost_usd
        missing = ""
        for model, usage in spent.unpriced.items():
            cost = None if prices is None else prices.dollars(model, usage)
            if cost is not None:
                self.cost_usd += cost
                continue
            missing = missing or model
            self.unpriced.add(model)
            if self.unpriced_usage is not None:
                self.unpriced_usage[model] = self.unpriced_usage.get(model, _NO_USAGE) + usage
        if missing and self.limits.max_cost_usd is not None:
            return self._price_unknown(missing, " (called before the run paused)")
        return self.over()

    def add_counts(
        self,
        *,
        requests: int = 0,
        tool_calls: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
    ) -> None:
        """Count what another part of the run's tree used (a child run elsewhere: a
        Temporal child workflow), without checking the budgets (the next call is)."""
        self.requests += requests
        self.tool_calls += tool_calls
        self._input += input_tokens
        self._output += output_tokens

    def over(self) -> Err | None:
        """The error of the first count past its budget (``None``: none is): for counts
        added with :meth:`add_counts`, which are not checked as they are added."""
        lim = self.limits
        inp, out = self._input, self._output
        for budget, used, allowed in (
            ("max_requests", self.requests, lim.max_requests),
            ("max_tool_calls", self.tool_calls, lim.max_tool_calls),
            ("max_input_tokens", inp, lim.max_input_tokens),
            ("max_output_tokens", out, lim.max_output_tokens),
            ("max_total_tokens", inp + out, lim.max_total_tokens),
        ):
            if allowed is not None and used > allowed:
                return exceeded(budget, used, allowed)
        if lim.max_cost_usd is not None and self.cost_usd > lim.max_cost_usd:
            return exceeded(
                "max_cost_usd", round(self.cost_usd, 9), lim.max_cost_usd, " US dollars"
            )
        return None

    def admit(self, directive: Any) -> Err | None:
        """Count ``directive`` about to be performed when it is a model call or a tool
        call; the error when that would pass a budget (``None``: within them)."""
        cls = type(directive)
        # Within the budget (the usual case) the call is counted here, in one frame; the
        # error of a call past it is admit_request's or admit_tool_call's.
        if cls is LLMGenerate or (cls is not ToolExec and isinstance(directive, LLMGenerate)):
            if self.requests >= self.request_bound:
                return self.admit_request()
            self.requests += 1
        elif cls is ToolExec or isinstance(directive, ToolExec):
            if self.tool_calls >= self.tool_call_bound:
                return self.admit_tool_call()
            self.tool_calls += 1
        return None


def admit(run: Any, ctx: Any, now: float) -> None:
    """A directive of ``run`` (a ``LocalRun``; ``ctx``, its ``DirectiveContext``) is about
    to be performed: count it when it is a model call
    or a tool call; past a budget, cancel the run with the error (the directive then
    ends with it, unperformed)."""
    meter: UsageMeter | None = run.meter
    assert meter is not None
    over = meter.admit(ctx.directive)
    if over is not None:
        run.cancel(over, now)


def admit_subcall(run: Any, now: float) -> Err | None:
    """A program's tool call is about to start: the error that answers it when it would
    pass ``max_tool_calls`` (the run is cancelled with it), else ``None``."""
    meter: UsageMeter | None = run.meter
    if meter is None:
        return None
    over = meter.admit_tool_call()
    if over is not None:
        run.cancel(over, now)
    return over


class RunCost:
    """The cost of one run's own model calls (``Step.cost_usd``), priced with a
    :class:`~ptcflow.providers.PriceTable`.

    A response of the model whose flat price the record holds (:attr:`model`; at first
    the table's :attr:`~ptcflow.providers.PriceTable.recent`), without cache tokens, is
    priced by :func:`account` itself, with the very sum ``ModelPrice.dollars`` computes;
    any other goes through :meth:`add`.

    Attributes:
        prices: the table.
        usd: dollars of the priced calls.
        unpriced: models called that have no price (then the run's cost is unknown).
        model: the model whose flat price follows (``None``: none yet).
        input_per_mtok: its input price.
        output_per_mtok: its output price.
    """

    __slots__ = ("input_per_mtok", "model", "output_per_mtok", "prices", "unpriced", "usd")

    def __init__(self, prices: PriceTable) -> None:
        self.prices = prices
        self.usd = 0.0
        self.unpriced: tuple[str, ...] = ()
        self.model, self.input_per_mtok, self.output_per_mtok = prices.recent

    def __repr__(self) -> str:
        return f"<RunCost usd={self.usd:.6f} unpriced={self.unpriced}>"

    def add(self, model: str, usage: Usage) -> float | None:
        """Price one call; its dollars (not rounded: :attr:`total` is), ``None`` when
        ``model`` has no price. A flat price found becomes :attr:`model`'s."""
        cost = self.prices.dollars(model, usage)
        if cost is None:
            if model not in self.unpriced:
                self.unpriced += (model,)
            return None
        self.usd += cost
        if model != self.model and (flat := self.prices.flat(model)) is not None:
            self.model = model
            self.input_per_mtok = flat.input_per_mtok
            self.output_per_mtok = flat.output_per_mtok
        return cost

    @property
    def total(self) -> float | None:
        """The run's dollars; ``None`` when a model it called has no price."""
        return None if self.unpriced else round(self.usd, 12)


def account(run: Any, ctx: Any, result: Ok[Any], now: float) -> Ok[Any] | Err:
    """A directive of ``run`` answered ``result``: price a model response (the run's cost)
    and count it against the run's budget. Past a budget, the run is cancelled with the
    error, which becomes the call's result (the strategy never acts on a response past the
    budget); its tokens still count (an ``ai.usage`` signal, the Step's usage). The
    caller calls it for model calls only (``LLMGenerate``)."""
    response = result.payload
    usage: Usage = response.usage
    model = response.model or ctx.directive.model or ""
    costs: RunCost | None = run.costs
    meter: UsageMeter | None = run.meter
    if meter is not None and not meter.checks_tokens:
        meter = None  # it counts calls only: admit did
    if (
        costs is not None
        and model == costs.model
        and not usage.cache_read_tokens
        and not usage.cache_write_tokens
    ):
        # The usual response, all in this frame: the run's model at its flat price
        # (ModelPrice.dollars' sum), counted as UsageMeter.charge counts it.
        cost = (
            usage.input_tokens * costs.input_per_mtok + usage.output_tokens * costs.output_per_mtok
        ) / _MTOK
        costs.usd += cost
        if meter is None:
            return result
        meter._input = inp = meter._input + usage.input_tokens
        meter._output = out = meter._output + usage.output_tokens
        meter.cost_usd = spent = meter.cost_usd + cost
        if (
            inp <= meter._max_input
            and out <= meter._max_output
            and inp + out <= meter._max_total
            and spent <= meter._max_cost
        ):
            return result
        over = meter._past(model, inp, out, cost)
    else:
        priced = None if costs is None else costs.add(model, usage)
        if meter is None:
            return result
        charged = meter.charge(model, usage, priced)
        if charged is None:
            return result
        over = charged
    run.cancel(over, now)
    run.emit(ctx, USAGE, UsageData(usage=usage, model=response.model))
    core = run.core  # the response is answered with the error: its tokens still count
    core.usage = core.usage + usage
    return over


def cost_attributes(
    attrs: dict[str, Any], usage: Usage, cost: float | None, unpriced: tuple[str, ...] | str
) -> None:
    """Add the cache tokens and the cost (or why it is unknown) to a span's attributes."""
    if usage.cache_read_tokens:
        attrs["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        attrs["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if cost is not None:
        attrs["ptcflow.cost_usd"] = cost
    elif unpriced:
        models = unpriced if isinstance(unpriced, str) else ", ".join(unpriced)
        attrs["ptcflow.cost_unknown"] = f"no price for {models}"
