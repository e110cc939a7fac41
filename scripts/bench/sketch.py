"""The task lifecycle document's own persistence sketch, as the benchmark's baseline.

"Agent State Machine Design" implements its 7-state task lifecycle in Python: a
transition table, an in-memory state machine, and `StatePersistence`, which writes
each transition as two SQLite commits (the audit row, then the checkpoint row) on
a WAL database. The classes below are the document's, cut to what a transition
runs (no recovery, no idempotent-step helper); `synchronous` is left at SQLite's
default, FULL, as the document leaves it.

Usage: python3 sketch.py DB_PATH. Each line on stdin, "PREFIX N", runs N tasks
through the document's refund demo (START, PAUSE_FOR_APPROVAL, APPROVAL_GRANTED,
TRANSIENT_ERROR, RETRY, COMPLETE, with the demo's metadata) and prints the
elapsed milliseconds on a line of its own.
"""

import json
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Dict, List


class TaskState(str, Enum):
    PLANNED = "planned"
    RUNNING = "running"
    PAUSED = "paused"
    BLOCKED = "blocked"
    RETRYING = "retrying"
    DONE = "done"
    FAILED = "failed"


class TaskEvent(str, Enum):
    START = "start"
    PAUSE_FOR_APPROVAL = "pause_for_approval"
    APPROVAL_GRANTED = "approval_granted"
    APPROVAL_DENIED = "approval_denied"
    BLOCK_ON_DEPENDENCY = "block_on_dependency"
    DEPENDENCY_RESOLVED = "dependency_resolved"
    TRANSIENT_ERROR = "transient_error"
    RETRY = "retry"
    MAX_RETRIES_EXCEEDED = "max_retries_exceeded"
    COMPLETE = "complete"
    FATAL_ERROR = "fatal_error"
    TIMEOUT = "timeout"


TRANSITION_TABLE: Dict[tuple, TaskState] = {
    (TaskState.PLANNED, TaskEvent.START): TaskState.RUNNING,
    (TaskState.RUNNING, TaskEvent.PAUSE_FOR_APPROVAL): TaskState.PAUSED,
    (TaskState.RUNNING, TaskEvent.BLOCK_ON_DEPENDENCY): TaskState.BLOCKED,
    (TaskState.RUNNING, TaskEvent.COMPLETE): TaskState.DONE,
    (TaskState.RUNNING, TaskEvent.FATAL_ERROR): TaskState.FAILED,
    (TaskState.RUNNING, TaskEvent.TRANSIENT_ERROR): TaskState.RETRYING,
    (TaskState.PAUSED, TaskEvent.APPROVAL_GRANTED): TaskState.RUNNING,
    (TaskState.PAUSED, TaskEvent.APPROVAL_DENIED): TaskState.FAILED,
    (TaskState.PAUSED, TaskEvent.TIMEOUT): TaskState.FAILED,
    (TaskState.BLOCKED, TaskEvent.DEPENDENCY_RESOLVED): TaskState.RUNNING,
    (TaskState.BLOCKED, TaskEvent.FATAL_ERROR): TaskState.FAILED,
    (TaskState.RETRYING, TaskEvent.RETRY): TaskState.RUNNING,
    (TaskState.RETRYING, TaskEvent.MAX_RETRIES_EXCEEDED): TaskState.FAILED,
    (TaskState.RETRYING, TaskEvent.FATAL_ERROR): TaskState.FAILED,
}


@dataclass
class StateTransition:
    task_id: str
    from_state: TaskState
    to_state: TaskState
    event: TaskEvent
    timestamp: str
    metadata: Dict[str, Any] = field(default_factory=dict)


class InvalidTransitionError(Exception):
    pass


class StatePersistence:
    def __init__(self, db_path: str = "agent_state.db"):
        self.conn = sqlite3.connect(db_path)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self._init_schema()

    def _init_schema(self):
        self.conn.executescript("""
            CREATE TABLE IF NOT EXISTS task_checkpoints (
                task_id TEXT PRIMARY KEY,
                state TEXT NOT NULL,
                retry_count INTEGER DEFAULT 0,
                checkpoint_data TEXT DEFAULT '{}',
                updated_at TEXT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS state_transitions (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                task_id TEXT NOT NULL,
                from_state TEXT NOT NULL,
                to_state TEXT NOT NULL,
                event TEXT NOT NULL,
                timestamp TEXT NOT NULL,
                metadata TEXT DEFAULT '{}'
            );
            CREATE INDEX IF NOT EXISTS idx_transitions_task
                ON state_transitions(task_id, timestamp);
        """)
        self.conn.commit()

    def save_transition(self, t: StateTransition) -> None:
        self.conn.execute(
            "INSERT INTO state_transitions "
            "(task_id, from_state, to_state, event, timestamp, metadata) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (t.task_id, t.from_state.value, t.to_state.value,
             t.event.value, t.timestamp, json.dumps(t.metadata))
        )
        self.conn.commit()

    def save_checkpoint(self, task_id: str, state: TaskState,
                        retry_count: int, checkpoint_data: dict = None) -> None:
        self.conn.execute(
            """INSERT OR REPLACE INTO task_checkpoints
               (task_id, state, retry_count, checkpoint_data, updated_at)
               VALUES (?, ?, ?, ?, ?)""",
            (task_id, state.value, retry_count,
             json.dumps(checkpoint_data or {}),
             datetime.now(timezone.utc).isoformat())
        )
        self.conn.commit()


class AgentTaskStateMachine:
    def __init__(self, task_id: str, persistence: StatePersistence,
                 max_retries: int = 3):
        self.task_id = task_id
        self.persistence = persistence
        self._state: TaskState = TaskState.PLANNED
        self._history: List[StateTransition] = []
        self._retry_count: int = 0
        self._max_retries: int = max_retries
        self._checkpoint: Dict[str, Any] = {}
        self._on_transition_callbacks: List[callable] = []

    def _notify_observers(self, transition: StateTransition) -> None:
        for cb in self._on_transition_callbacks:
            try:
                cb(transition)
            except Exception:
                pass

    def transition(self, event: TaskEvent,
                   metadata: Dict[str, Any] = None) -> TaskState:
        key = (self._state, event)
        next_state = TRANSITION_TABLE.get(key)
        if next_state is None:
            raise InvalidTransitionError(
                f"Invalid transition: {self._state.value} + {event.value}"
            )
        if event == TaskEvent.RETRY:
            self._retry_count += 1
            if self._retry_count > self._max_retries:
                raise InvalidTransitionError(
                    f"Max retries exceeded ({self._max_retries}) — "
                    f"use MAX_RETRIES_EXCEEDED event"
                )
        transition_record = StateTransition(
            task_id=self.task_id,
            from_state=self._state,
            to_state=next_state,
            event=event,
            timestamp=datetime.now(timezone.utc).isoformat(),
            metadata=metadata or {},
        )
        self._history.append(transition_record)
        self._state = next_state
        self.persistence.save_transition(transition_record)
        self.persistence.save_checkpoint(
            self.task_id, self._state, self._retry_count,
            self._checkpoint
        )
        self._notify_observers(transition_record)
        return self._state


def refund_demo(persistence: StatePersistence, task_id: str) -> None:
    """The document's demo lifecycle: six transitions, twelve commits."""
    sm = AgentTaskStateMachine(task_id=task_id, persistence=persistence)
    sm.transition(TaskEvent.START)
    sm.transition(TaskEvent.PAUSE_FOR_APPROVAL,
                  metadata={"step": "refund_approval", "amount": 150.00})
    sm.transition(TaskEvent.APPROVAL_GRANTED,
                  metadata={"approver": "manager@example.com"})
    sm.transition(TaskEvent.TRANSIENT_ERROR,
                  metadata={"error": "rate_limit", "step": "send_notification"})
    sm.transition(TaskEvent.RETRY)
    sm.transition(TaskEvent.COMPLETE, metadata={"result": "refund_processed"})
    assert sm._state == TaskState.DONE


def main() -> None:
    persistence = StatePersistence(sys.argv[1])
    for line in sys.stdin:
        prefix, count = line.split()
        start = time.perf_counter()
        for i in range(int(count)):
            refund_demo(persistence, f"{prefix}-{i}")
        print(f"{(time.perf_counter() - start) * 1000:.3f}", flush=True)


if __name__ == "__main__":
    main()
