-- A call's row takes the next position in its conversation (MAX(position) + 1): without an
-- index that was a scan of the conversation's calls at every call, quadratic in a long turn.
CREATE INDEX IF NOT EXISTS tool_calls_by_position ON tool_calls (scope, conversation_id, position);
