"""The one road every tool call takes: validate, guard, plan, review, commit, record."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from .._runtime.gc_pause import paused_gc
from ..audit.log import AuditLog
from ..changes.changeset import ChangeKind, ChangeSet
from ..errors import ErrorCode, ToolError
from ..hooks.decision import Decision, Risk, ToolCall, Verdict
from ..hooks.runner import HookRunner, Review
from ..journal.undo_journal import UndoJournal
from ..ops.commit import LEFT_SHOWN
from ..result import ToolResult
from .call_record import (
    DENIAL_HINT,
    CallOutcome,
    audit_event,
    denial_reason,
    modification_note,
)
from .command_tool import require_confinement
from .context import ToolContext
from .plan import Plan
from .restore import commit_payload, recover_interrupted
from .spec import PathIntent, ToolSpec
from .validate import validate_arguments


@dataclass
class CallRecord:
    """What the audit event of one call is made from, filled in as the call goes."""

    tool: str
    args: dict[str, Any]
    started: float = field(default_factory=time.perf_counter)
    review: Review | None = None
    changeset: ChangeSet | None = None
    committed: bool = False
    bytes_read: int = 0
    bytes_written: int = 0


class Pipeline:
    def __init__(
        self,
        tools: dict[str, ToolSpec],
        ctx: ToolContext,
        hooks: HookRunner,
        audit: AuditLog | None,
    ) -> None:
        self.tools = tools
        self.ctx = ctx
        self.hooks = hooks
        self.audit = audit
        self.recovered: list[str] | None = None

    async def call(self, name: str, args: Any) -> ToolResult:
        record = CallRecord(name, args if isinstance(args, dict) else {"arguments": args})
        bytes_before = self.ctx.limiter.bytes
        try:
            if self.recovered is None and self.ctx.journal is not None:
                self.recovered = []  # tried once: a failure is reported, not repeated
                self.recovered = await recover_interrupted(
                    self.ctx, self.ctx.journal, complete_landed=True
                )
            result = await self._run(record, name, args)
        except ToolError as error:
            result = ToolResult.failure(error)
        except Exception as exc:  # a tool call must never crash the caller
            result = ToolResult.failure(
                ToolError(
                    ErrorCode.INTERNAL_ERROR,
                    f"{name} failed unexpectedly: {type(exc).__name__}: {exc}",
                    "this is a bug in the toolkit; try a different approach",
                )
            )
        record.bytes_read = self.ctx.limiter.bytes - bytes_before
        self._record(record, result)
        return result

    async def _run(self, record: CallRecord, name: str, raw_args: Any) -> ToolResult:
        spec = self.tools.get(name)
        if spec is None:
            raise ToolError(
                ErrorCode.UNKNOWN_TOOL,
                f"there is no tool named {name!r}",
                f"available tools: {', '.join(sorted(self.tools))}",
            )
        args = validate_arguments(name, spec.parameters, raw_args)
        record.args = args
        self._guard(spec, args)
        self.ctx.limiter.charge_request()
        if spec.plan is not None:
            return await self._planned(record, spec, args)
        return await self._direct(record, spec, args)

    def _guard(self, spec: ToolSpec, args: dict[str, Any]) -> None:
        """Refuse a bad path, or a command nothing would confine, before any hook is
        asked: a person is never shown an escape attempt as if it were a call to
        approve. Tools resolve again (the guard is cheap) because they need the
        resolved path at the moment of use."""
        if spec.risk is Risk.EXECUTE:
            require_confinement(self.ctx)
        for named in spec.paths(args):
            self.ctx.resolve(named.path, for_write=named.intent is PathIntent.WRITE)

    async def _direct(self, record: CallRecord, spec: ToolSpec, args: dict[str, Any]) -> ToolResult:
        call = spec.review_call(args, call_id=uuid.uuid4().hex[:12], session_id=self._session)

        async def replan(current: ToolCall, decision: Decision) -> ToolCall:
            new_args = validate_arguments(spec.name, spec.parameters, decision.modified_args)
            return spec.review_call(
                new_args, call_id=current.call_id, session_id=current.session_id
            )

        review = await self.hooks.before(call, replan)
        record.review = review
        refused = _refusal(review)
        if refused is not None:
            return refused
        assert spec.run is not None
        record.args = review.call.args
        result = await spec.run(self.ctx, review.call.args)
        return await self.hooks.after(review.call, _told_of_changes(result, review))

    async def _planned(
        self, record: CallRecord, spec: ToolSpec, args: dict[str, Any]
    ) -> ToolResult:
        assert spec.plan is not None
        plan = await spec.plan(self.ctx, args)
        call = self._planned_call(spec, args, plan, uuid.uuid4().hex[:12])

        async def replan(current: ToolCall, decision: Decision) -> ToolCall:
            nonlocal plan
            if decision.modified_args is not None:
                new_args = validate_arguments(spec.name, spec.parameters, decision.modified_args)
                plan = await spec.plan(self.ctx, new_args)  # type: ignore[misc]
            else:
                new_args = current.args
            if decision.modified_content:
                plan = plan.with_content(decision.modified_content, self.ctx.root)
            return self._planned_call(spec, new_args, plan, current.call_id)

        record.changeset = plan.changeset
        review = await self.hooks.before(call, replan)
        record.review = review
        refused = _refusal(review)
        if refused is not None:
            return refused
        final = plan  # the latest re-plan is the one the hooks approved
        record.args = review.call.args
        record.changeset = final.changeset
        report = await self._commit(final)
        record.committed = True
        record.bytes_written = report.get("bytes_written", 0)
        result = _told_of_leftovers(final.render(final.changeset, report), report)
        result.data["change_id"] = final.changeset.change_id
        return await self.hooks.after(review.call, _told_of_changes(result, review))

    async def _commit(self, plan: Plan) -> dict[str, Any]:
        changeset = plan.changeset
        self.ctx.guard.refuse_git_dirs_made(
            str(change.dest if change.kind is ChangeKind.MOVE else change.path)
            for change in changeset.changes
            if change.kind in (ChangeKind.CREATE, ChangeKind.MKDIR, ChangeKind.MOVE)
        )
        journal = self.ctx.journal
        try:
            report = await self.ctx.provider.commit(
                changeset.change_id,
                commit_payload(changeset, self.ctx.provider.in_process),
                partial(_before_commit, changeset, journal),
            )
        except ToolError as error:
            # The commit rolls itself back on any error it can see; only a worker
            # that died mid-commit leaves files for recovery to put back.
            if journal is not None:
                if error.code is ErrorCode.SANDBOX_FAILURE:
                    await recover_interrupted(self.ctx, journal)
                else:
                    journal.abandon(changeset.change_id)
            raise
        except Exception:
            if journal is not None:
                journal.abandon(changeset.change_id)
            raise
        if journal is not None:
            journal.finish(changeset.change_id)
        for change in changeset.changes:
            if change.dest is not None:
                self.ctx.read_state.remember(change.path, None)
                self.ctx.read_state.remember(change.dest, change.new_bytes, change.new_hash)
            else:
                self.ctx.read_state.remember(
                    change.path, change.new_bytes, change.new_hash, plan.new_view(change)
                )
        if plan.after_commit is not None:
            plan.after_commit(changeset)
        return report

    def _planned_call(
        self, spec: ToolSpec, args: dict[str, Any], plan: Plan, call_id: str
    ) -> ToolCall:
        """The call the hooks review; its diff is left empty when no hook reads it
        (``_before_commit`` computes it then)."""
        diff = ""
        if self.hooks.read_diffs:
            with paused_gc():
                diff = plan.changeset.unified_diff()
        return spec.review_call(
            args,
            changeset=plan.changeset,
            diff=diff,
            call_id=call_id,
            session_id=self._session,
        )

    @property
    def _session(self) -> str:
        """The audit log's session, so a reviewer sees the id the log will carry."""
        return self.audit.session_id if self.audit is not None else ""

    def _record(self, record: CallRecord, result: ToolResult) -> None:
        if self.audit is None:
            return
        decision = record.review.decision if record.review else None
        changeset = record.changeset
        if changeset is not None:
            paths = changeset.relative_paths()
        else:
            spec = self.tools.get(record.tool)
            paths = [named.path for named in spec.paths(record.args)] if spec else []
        denied = decision is not None and decision.verdict is Verdict.DENY
        outcome = CallOutcome(
            tool=record.tool,
            arguments=record.args,
            started=record.started,
            provider=self.ctx.provider.name,
            root=str(self.ctx.root),
            decision=decision,
            outcome="denied" if denied else "ok" if result.ok else "error",
            message=result.text,
            error_code=result.error.code if result.error else None,
            security_violation=bool(
                (result.error and result.error.security_violation)
                or result.data.get("security_violation")
            ),
            paths=paths,
            abs_paths=[str(p) for p in changeset.paths()] if changeset else [],
            changeset=changeset,
            committed=record.committed,
            bytes_read=record.bytes_read,
            bytes_written=record.bytes_written,
        )
        self.audit.record(audit_event(outcome))


def _before_commit(changeset: ChangeSet, journal: UndoJournal | None) -> None:
    """What must be done before the commit changes anything, which an in-process
    commit runs while the disk writes the new contents: the diff the result and the
    audit record show (computed once, for review too if a hook reads it), then the
    undo journal, or without one the new contents' digests the read state keeps."""
    with paused_gc():
        changeset.unified_diff()
    if journal is not None:
        journal.begin(changeset)
        return
    for change in changeset.changes:
        _ = change.new_hash


def _refusal(review: Review) -> ToolResult | None:
    decision = review.decision
    if decision.verdict is Verdict.DENY:
        return ToolResult.failure(
            ToolError(ErrorCode.DENIED_BY_HOOK, denial_reason(decision), DENIAL_HINT)
        )
    if decision.verdict is Verdict.ALTERNATIVE_RESPONSE:
        return ToolResult.success(decision.response or "", {"alternative_response": True})
    return None


def _told_of_leftovers(result: ToolResult, report: dict[str, Any]) -> ToolResult:
    """A change made whole whose backups of the old contents could not all be removed
    (their folder refused) says where they are, so none is left unsaid."""
    left = report.get("leftover_backups")
    if not left:
        return result
    note = (
        f"Note: the change is complete, but {len(left)} backup(s) of the old content could "
        f"not be removed: {', '.join(left[:LEFT_SHOWN])}"
        f"{', ...' if len(left) > LEFT_SHOWN else ''}. They are the toolkit's own "
        "('.tafs-' names) and can be deleted."
    )
    data = {**result.data, "leftover_backups": left}
    return ToolResult(result.ok, f"{result.text}\n{note}", data, result.error)


def _told_of_changes(result: ToolResult, review: Review) -> ToolResult:
    """Tell the model that a person changed its call, and how."""
    if not review.modified_by:
        return result
    who = ", ".join(sorted({m.decided_by for m in review.modified_by}))
    data = {**result.data, "modified_by": who}
    return ToolResult(result.ok, f"{result.text}\n{modification_note(review)}", data, result.error)
