-- The project store (SPEC §2) in tables: one row per project, one per task, one per log entry,
-- checkpoint and research brief. JSON is kept as text, byte for byte as cairn wrote it, so an
-- export writes the same files and unknown fields keep their order. Timestamps are RFC 3339 text
-- for the same reason: they read back exactly, nanoseconds included.

CREATE TABLE cairn_projects (
    id              text PRIMARY KEY,
    -- project.json
    record          text NOT NULL,
    -- tasks.json without its `tasks` array (version, project_id, counters, unknown fields)
    task_doc        text NOT NULL,
    -- progress/velocity.json, once written
    velocity        text,
    -- the last log sequence number and checkpoint number handed out
    log_seq         bigint NOT NULL DEFAULT 0,
    checkpoint_seq  integer NOT NULL DEFAULT 0
);

CREATE TABLE cairn_tasks (
    project   text NOT NULL REFERENCES cairn_projects (id) ON DELETE CASCADE,
    id        text NOT NULL,
    -- the task's place in tasks.json
    position  integer NOT NULL,
    body      text NOT NULL,
    PRIMARY KEY (project, id)
);
CREATE INDEX cairn_tasks_order ON cairn_tasks (project, position);

CREATE TABLE cairn_log (
    project  text NOT NULL REFERENCES cairn_projects (id) ON DELETE CASCADE,
    seq      bigint NOT NULL,
    at       text NOT NULL,
    kind     text NOT NULL,
    -- the entry's `- key: value` lines, as a JSON array of [key, value] pairs, in order
    fields   text NOT NULL,
    PRIMARY KEY (project, seq)
);

CREATE TABLE cairn_checkpoints (
    project     text NOT NULL REFERENCES cairn_projects (id) ON DELETE CASCADE,
    number      integer NOT NULL,
    written_at  text NOT NULL,
    -- the tasks.json snapshot
    body        text NOT NULL,
    PRIMARY KEY (project, number)
);

CREATE TABLE cairn_research (
    project      text NOT NULL REFERENCES cairn_projects (id) ON DELETE CASCADE,
    task         text NOT NULL,
    modified_at  text NOT NULL,
    body         text NOT NULL,
    PRIMARY KEY (project, task)
);
