-- The rules (`mcp_host_registry::schema::CHECKER`) under which the pinned definition's input
-- schema compiled, so a later start offers the tool without compiling its schema again (it
-- compiles at the tool's first call). NULL: not known to compile under any.
ALTER TABLE tool_pins ADD COLUMN schema_checked TEXT;
