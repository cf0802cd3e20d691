#!/bin/bash
# Re-collects the PyPI MCP servers' tools/list records in eval/servers/ (collected 2026-12-02).
# Needs the PyPI registry (pip) and Python 3.11; installs each server into its own venv under /tmp/eval-collect/pypi.
# Servers were installed with "mcp<2" "fastmcp<3" pins, which make pip pick older releases of some servers.
set -e
HERE="$(cd "$(dirname "$0")" && pwd)"; OUT="$HERE/../servers"; B=/tmp/eval-collect/pypi; S=/tmp/eval-collect/scratch
mkdir -p "$B" "$S/docs" "$S/papers"
[ -d "$S/repo/.git" ] || (git init -q "$S/repo" && cd "$S/repo" && git -c user.email=a@b -c user.name=t commit -q --allow-empty -m init)
[ -f "$S/test.db" ] || python3 -c "import sqlite3;sqlite3.connect('$S/test.db').execute('create table t(x)')"
cd "$S"

# git: 12 tools
python3 -m venv "$B/git" && "$B/git/bin/pip" install -q "mcp-server-git==2026.10.10" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name git --package mcp-server-git --registry pypi --version 2026.10.10  --out "$OUT/git.json" -- "$B/git/bin/mcp-server-git" --repository "$S/repo"

# sqlite: 6 tools
python3 -m venv "$B/sqlite" && "$B/sqlite/bin/pip" install -q "mcp-server-sqlite==2025.4.25" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name sqlite --package mcp-server-sqlite --registry pypi --version 2025.4.25  --out "$OUT/sqlite.json" -- "$B/sqlite/bin/mcp-server-sqlite" --db-path "$S/test.db"

# arxiv: 19 tools
python3 -m venv "$B/arxiv" && "$B/arxiv/bin/pip" install -q "arxiv-mcp-server==0.8.2" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name arxiv --package arxiv-mcp-server --registry pypi --version 0.8.2  --out "$OUT/arxiv.json" -- "$B/arxiv/bin/arxiv-mcp-server" --storage-path "$S/papers"

# obsidian: 15 tools
python3 -m venv "$B/obsidian" && "$B/obsidian/bin/pip" install -q "mcp-obsidian==0.2.3" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name obsidian --package mcp-obsidian --registry pypi --version 0.2.3 --env OBSIDIAN_API_KEY=dummy-obsidian-key --out "$OUT/obsidian.json" -- "$B/obsidian/bin/mcp-obsidian"

# atlassian: 90 tools
python3 -m venv "$B/atlassian" && "$B/atlassian/bin/pip" install -q "mcp-atlassian==0.22.1" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name atlassian --package mcp-atlassian --registry pypi --version 0.22.1 --env JIRA_URL=https://example.atlassian.net --env JIRA_USERNAME=user@example.com --env JIRA_API_TOKEN=dummy-jira-token --env CONFLUENCE_URL=https://example.atlassian.net/wiki --env CONFLUENCE_USERNAME=user@example.com --env CONFLUENCE_API_TOKEN=dummy-confluence-token --out "$OUT/atlassian.json" -- "$B/atlassian/bin/mcp-atlassian"

# aws-docs: 5 tools
python3 -m venv "$B/aws-docs" && "$B/aws-docs/bin/pip" install -q "awslabs.aws-documentation-mcp-server==1.1.30" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name aws-docs --package awslabs.aws-documentation-mcp-server --registry pypi --version 1.1.30 --env FASTMCP_LOG_LEVEL=ERROR --env AWS_DOCUMENTATION_PARTITION=aws --out "$OUT/aws-docs.json" -- "$B/aws-docs/bin/awslabs.aws-documentation-mcp-server"

# aws-pricing: 9 tools
python3 -m venv "$B/aws-pricing" && "$B/aws-pricing/bin/pip" install -q "awslabs.aws-pricing-mcp-server==1.0.34" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name aws-pricing --package awslabs.aws-pricing-mcp-server --registry pypi --version 1.0.34 --env AWS_REGION=us-east-1 --env AWS_ACCESS_KEY_ID=AKIADUMMYDUMMY000000 --env AWS_SECRET_ACCESS_KEY=dummysecret --env FASTMCP_LOG_LEVEL=ERROR --out "$OUT/aws-pricing.json" -- "$B/aws-pricing/bin/awslabs.aws-pricing-mcp-server"

# dynamodb: 30 tools
python3 -m venv "$B/dynamodb" && "$B/dynamodb/bin/pip" install -q "awslabs.dynamodb-mcp-server==1.0.6" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name dynamodb --package awslabs.dynamodb-mcp-server --registry pypi --version 1.0.6 --env AWS_REGION=us-east-1 --env AWS_ACCESS_KEY_ID=AKIADUMMYDUMMY000000 --env AWS_SECRET_ACCESS_KEY=dummysecret --env FASTMCP_LOG_LEVEL=ERROR --out "$OUT/dynamodb.json" -- "$B/dynamodb/bin/awslabs.dynamodb-mcp-server"

# eks: 16 tools
python3 -m venv "$B/eks" && "$B/eks/bin/pip" install -q "awslabs.eks-mcp-server==0.1.37" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name eks --package awslabs.eks-mcp-server --registry pypi --version 0.1.37 --env AWS_REGION=us-east-1 --env AWS_ACCESS_KEY_ID=AKIADUMMYDUMMY000000 --env AWS_SECRET_ACCESS_KEY=dummysecret --env FASTMCP_LOG_LEVEL=ERROR --out "$OUT/eks.json" -- "$B/eks/bin/awslabs.eks-mcp-server"

# cloudwatch: 19 tools
python3 -m venv "$B/cloudwatch" && "$B/cloudwatch/bin/pip" install -q "awslabs.cloudwatch-mcp-server==0.1.8" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name cloudwatch --package awslabs.cloudwatch-mcp-server --registry pypi --version 0.1.8 --env AWS_REGION=us-east-1 --env AWS_ACCESS_KEY_ID=AKIADUMMYDUMMY000000 --env AWS_SECRET_ACCESS_KEY=dummysecret --env FASTMCP_LOG_LEVEL=ERROR --out "$OUT/cloudwatch.json" -- "$B/cloudwatch/bin/awslabs.cloudwatch-mcp-server"

# clickhouse: 3 tools
python3 -m venv "$B/clickhouse" && "$B/clickhouse/bin/pip" install -q "mcp-clickhouse==0.5.0" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name clickhouse --package mcp-clickhouse --registry pypi --version 0.5.0 --env CLICKHOUSE_HOST=localhost --env CLICKHOUSE_USER=default --env CLICKHOUSE_PASSWORD=dummy --out "$OUT/clickhouse.json" -- "$B/clickhouse/bin/mcp-clickhouse"

# neo4j-cypher: 3 tools
python3 -m venv "$B/neo4j-cypher" && "$B/neo4j-cypher/bin/pip" install -q "mcp-neo4j-cypher==0.6.0" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name neo4j-cypher --package mcp-neo4j-cypher --registry pypi --version 0.6.0 --env NEO4J_URI=bolt://localhost:7687 --env NEO4J_USERNAME=neo4j --env NEO4J_PASSWORD=dummy --out "$OUT/neo4j-cypher.json" -- "$B/neo4j-cypher/bin/mcp-neo4j-cypher"

# wikipedia: 22 tools
python3 -m venv "$B/wikipedia" && "$B/wikipedia/bin/pip" install -q "wikipedia-mcp==2.0.1" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name wikipedia --package wikipedia-mcp --registry pypi --version 2.0.1  --out "$OUT/wikipedia.json" -- "$B/wikipedia/bin/wikipedia-mcp"

# excel: 25 tools
python3 -m venv "$B/excel" && "$B/excel/bin/pip" install -q "excel-mcp-server==0.1.8" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name excel --package excel-mcp-server --registry pypi --version 0.1.8 --env EXCEL_FILES_PATH=$S/docs --out "$OUT/excel.json" -- "$B/excel/bin/excel-mcp-server" stdio

# word: 54 tools
python3 -m venv "$B/word" && "$B/word/bin/pip" install -q "office-word-mcp-server==1.1.11" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name word --package office-word-mcp-server --registry pypi --version 1.1.11  --out "$OUT/word.json" -- "$B/word/bin/word_mcp_server"

# powerpoint: 37 tools
python3 -m venv "$B/powerpoint" && "$B/powerpoint/bin/pip" install -q "office-powerpoint-mcp-server==2.0.7" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name powerpoint --package office-powerpoint-mcp-server --registry pypi --version 2.0.7  --out "$OUT/powerpoint.json" -- "$B/powerpoint/bin/ppt_mcp_server"

# tree-sitter: 26 tools
python3 -m venv "$B/tree-sitter" && "$B/tree-sitter/bin/pip" install -q "mcp-server-tree-sitter==0.7.0" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name tree-sitter --package mcp-server-tree-sitter --registry pypi --version 0.7.0  --out "$OUT/tree-sitter.json" -- "$B/tree-sitter/bin/mcp-server-tree-sitter"

# motherduck: 4 tools
python3 -m venv "$B/motherduck" && "$B/motherduck/bin/pip" install -q "mcp-server-motherduck==1.0.5" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name motherduck --package mcp-server-motherduck --registry pypi --version 1.0.5  --out "$OUT/motherduck.json" -- "$B/motherduck/bin/mcp-server-motherduck" --db-path :memory: --read-write

# email: 21 tools
python3 -m venv "$B/email" && "$B/email/bin/pip" install -q "mcp-email-server==1.13.3" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name email --package mcp-email-server --registry pypi --version 1.13.3 --env MCP_EMAIL_SERVER_CONFIG_PATH=$S/email-config.toml --out "$OUT/email.json" -- "$B/email/bin/mcp-email-server" stdio

# elasticsearch-py: 20 tools
python3 -m venv "$B/elasticsearch-py" && "$B/elasticsearch-py/bin/pip" install -q "elasticsearch-mcp-server==2.1.3" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name elasticsearch-py --package elasticsearch-mcp-server --registry pypi --version 2.1.3 --env ELASTICSEARCH_HOSTS=https://localhost:9200 --env ELASTICSEARCH_USERNAME=elastic --env ELASTICSEARCH_PASSWORD=dummy --out "$OUT/elasticsearch-py.json" -- "$B/elasticsearch-py/bin/elasticsearch-mcp-server"

# prometheus: 6 tools
python3 -m venv "$B/prometheus" && "$B/prometheus/bin/pip" install -q "prometheus-mcp-server==1.5.3" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name prometheus --package prometheus-mcp-server --registry pypi --version 1.5.3 --env PROMETHEUS_URL=http://localhost:9090 --out "$OUT/prometheus.json" -- "$B/prometheus/bin/prometheus-mcp-server"

# zotero: 3 tools
python3 -m venv "$B/zotero" && "$B/zotero/bin/pip" install -q "zotero-mcp==0.1.6" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name zotero --package zotero-mcp --registry pypi --version 0.1.6 --env ZOTERO_LOCAL=true --out "$OUT/zotero.json" -- "$B/zotero/bin/zotero-mcp"

# yahoo-finance: 10 tools
python3 -m venv "$B/yahoo-finance" && "$B/yahoo-finance/bin/pip" install -q "mcp-yahoo-finance==0.1.3" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name yahoo-finance --package mcp-yahoo-finance --registry pypi --version 0.1.3  --out "$OUT/yahoo-finance.json" -- "$B/yahoo-finance/bin/mcp-yahoo-finance"

# paper-search: 57 tools
python3 -m venv "$B/paper-search" && "$B/paper-search/bin/pip" install -q "paper-search-mcp==0.1.4" "mcp<2" "fastmcp<3"
python3 "$HERE/list_tools.py" --name paper-search --package paper-search-mcp --registry pypi --version 0.1.4  --out "$OUT/paper-search.json" -- "$B/paper-search/bin/paper-search-mcp"
