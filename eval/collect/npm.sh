#!/usr/bin/env bash
# Re-collects the npm half of the MCP tool-search evaluation set (eval/servers/*.json, registry "npm").
# Written 2026-12-02. Needs the npm registry (packages are installed with npm); no other network.
# Each server is installed into its own prefix, /tmp/eval-collect/npm/NAME: installing them all into one
# node_modules lets a later install change shared hoisted deps (zod 3 vs 4) and silently drops argument
# descriptions from some tool schemas (seen for airtable, everything, google-calendar, jira).
# Tool schemas depend on which zod / zod-to-json-schema npm resolves, not only on the server version:
# filesystem, memory and todoist differ between a shared and an isolated install, and gitlab@2025.4.25 in an
# isolated install (Dec 2026) gives empty inputSchemas, so eval/servers/gitlab.json was kept from a shared
# install (/tmp/eval-collect/npm/node_modules, zod 3.25.76 hoisted); re-running gitlab here will not match it.
# The redis server needs a local redis-server on 127.0.0.1:6379 (Debian package redis-server).
# Usage: bash eval/collect/npm.sh [NAME ...]   (no NAME: all)
set -u
cd "$(dirname "$0")/../.."
L="python3 eval/collect/list_tools.py"
S=eval/servers
B=/tmp/eval-collect/npm
mkdir -p $B /tmp/eval-collect/scratch/fs /tmp/eval-collect/scratch/memory
echo '{"installed":{"client_id":"dummy.apps.googleusercontent.com","client_secret":"dummy","redirect_uris":["http://localhost"]}}' > /tmp/eval-collect/scratch/gcp-oauth.keys.json
echo '{"access_token":"dummy","refresh_token":"dummy","token_type":"Bearer","expiry_date":9999999999999}' > /tmp/eval-collect/scratch/gmail-credentials.json
ONLY=" $* "
sel() { [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $1 "* ]]; }
inst() { mkdir -p "$B/$1" && ( cd "$B/$1" && [ -f package.json ] || echo '{"private":true}' > package.json; cd "$B/$1" && npm install --no-audit --no-fund --ignore-scripts "$2" ); }

if sel filesystem; then
  inst filesystem @modelcontextprotocol/server-filesystem@2026.8.31
  $L --name filesystem --package @modelcontextprotocol/server-filesystem --registry npm --version 2026.8.31 --out $S/filesystem.json -- node $B/filesystem/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js /tmp/eval-collect/scratch/fs
fi
if sel memory; then
  inst memory @modelcontextprotocol/server-memory@2026.8.31
  $L --name memory --package @modelcontextprotocol/server-memory --registry npm --version 2026.8.31 --env MEMORY_FILE_PATH=/tmp/eval-collect/scratch/memory/memory.jsonl --out $S/memory.json -- node $B/memory/node_modules/@modelcontextprotocol/server-memory/dist/index.js
fi
if sel everything; then
  inst everything @modelcontextprotocol/server-everything@2026.8.31
  $L --name everything --package @modelcontextprotocol/server-everything --registry npm --version 2026.8.31 --out $S/everything.json -- node $B/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
fi
if sel github; then
  inst github @modelcontextprotocol/server-github@2025.4.8
  $L --name github --package @modelcontextprotocol/server-github --registry npm --version 2025.4.8 --env GITHUB_PERSONAL_ACCESS_TOKEN=dummy --out $S/github.json -- node $B/github/node_modules/@modelcontextprotocol/server-github/dist/index.js
fi
if sel gitlab; then
  inst gitlab @modelcontextprotocol/server-gitlab@2025.4.25
  $L --name gitlab --package @modelcontextprotocol/server-gitlab --registry npm --version 2025.4.25 --env GITLAB_PERSONAL_ACCESS_TOKEN=dummy --env GITLAB_API_URL=https://gitlab.com/api/v4 --out $S/gitlab.json -- node $B/gitlab/node_modules/@modelcontextprotocol/server-gitlab/dist/index.js
fi
if sel slack; then
  inst slack @modelcontextprotocol/server-slack@2025.4.25
  $L --name slack --package @modelcontextprotocol/server-slack --registry npm --version 2025.4.25 --env SLACK_BOT_TOKEN=xoxb-dummy --env SLACK_TEAM_ID=T00000000 --out $S/slack.json -- node $B/slack/node_modules/@modelcontextprotocol/server-slack/dist/index.js
fi
if sel google-maps; then
  inst google-maps @modelcontextprotocol/server-google-maps@0.6.2
  $L --name google-maps --package @modelcontextprotocol/server-google-maps --registry npm --version 0.6.2 --env GOOGLE_MAPS_API_KEY=dummy --out $S/google-maps.json -- node $B/google-maps/node_modules/@modelcontextprotocol/server-google-maps/dist/index.js
fi
if sel puppeteer; then
  inst puppeteer @modelcontextprotocol/server-puppeteer@2025.5.12
  $L --name puppeteer --package @modelcontextprotocol/server-puppeteer --registry npm --version 2025.5.12 --out $S/puppeteer.json -- node $B/puppeteer/node_modules/@modelcontextprotocol/server-puppeteer/dist/index.js
fi
if sel notion; then
  inst notion @notionhq/notion-mcp-server@2.5.2
  $L --name notion --package @notionhq/notion-mcp-server --registry npm --version 2.5.2 --env NOTION_TOKEN=dummy --out $S/notion.json -- node $B/notion/node_modules/@notionhq/notion-mcp-server/bin/cli.mjs
fi
if sel playwright; then
  inst playwright @playwright/mcp@0.0.83
  $L --name playwright --package @playwright/mcp --registry npm --version 0.0.83 --out $S/playwright.json -- node $B/playwright/node_modules/@playwright/mcp/cli.js --headless
fi
if sel firecrawl; then
  inst firecrawl firecrawl-mcp@3.26.0
  $L --name firecrawl --package firecrawl-mcp --registry npm --version 3.26.0 --env FIRECRAWL_API_KEY=fc-dummy --out $S/firecrawl.json -- node $B/firecrawl/node_modules/firecrawl-mcp/dist/index.js
fi
if sel tavily; then
  inst tavily tavily-mcp@0.2.22
  $L --name tavily --package tavily-mcp --registry npm --version 0.2.22 --env TAVILY_API_KEY=tvly-dummy --out $S/tavily.json -- node $B/tavily/node_modules/tavily-mcp/build/index.js
fi
if sel sentry; then
  inst sentry @sentry/mcp-server@0.39.0
  $L --name sentry --package @sentry/mcp-server --registry npm --version 0.39.0 --env SENTRY_ACCESS_TOKEN=dummy --out $S/sentry.json -- node $B/sentry/node_modules/@sentry/mcp-server/dist/index.js
fi
if sel kubernetes; then
  inst kubernetes mcp-server-kubernetes@4.1.7
  $L --name kubernetes --package mcp-server-kubernetes --registry npm --version 4.1.7 --out $S/kubernetes.json -- node $B/kubernetes/node_modules/mcp-server-kubernetes/dist/index.js
fi
if sel hubspot; then
  inst hubspot @hubspot/mcp-server@0.4.0
  $L --name hubspot --package @hubspot/mcp-server --registry npm --version 0.4.0 --env PRIVATE_APP_ACCESS_TOKEN=dummy --out $S/hubspot.json -- node $B/hubspot/node_modules/@hubspot/mcp-server/dist/index.js
fi
if sel airtable; then
  inst airtable airtable-mcp-server@1.14.0
  $L --name airtable --package airtable-mcp-server --registry npm --version 1.14.0 --env AIRTABLE_API_KEY=dummy --out $S/airtable.json -- node $B/airtable/node_modules/airtable-mcp-server/dist/main.js
fi
if sel playwright-ea; then
  inst playwright-ea @executeautomation/playwright-mcp-server@1.0.12
  $L --name playwright-ea --package @executeautomation/playwright-mcp-server --registry npm --version 1.0.12 --out $S/playwright-ea.json -- node $B/playwright-ea/node_modules/@executeautomation/playwright-mcp-server/dist/index.js
fi
if sel mongodb; then
  inst mongodb mongodb-mcp-server@3.0.4
  $L --name mongodb --package mongodb-mcp-server --registry npm --version 3.0.4 --out $S/mongodb.json -- node $B/mongodb/node_modules/mongodb-mcp-server/dist/esm/index.js
fi
if sel elasticsearch; then
  inst elasticsearch @elastic/mcp-server-elasticsearch@0.3.1
  $L --name elasticsearch --package @elastic/mcp-server-elasticsearch --registry npm --version 0.3.1 --env ES_URL=http://localhost:9200 --env ES_API_KEY=dummy --out $S/elasticsearch.json -- node $B/elasticsearch/node_modules/@elastic/mcp-server-elasticsearch/dist/index.js
fi
if sel desktop-commander; then
  inst desktop-commander @wonderwhy-er/desktop-commander@0.2.52
  $L --name desktop-commander --package @wonderwhy-er/desktop-commander --registry npm --version 0.2.52 --out $S/desktop-commander.json -- node $B/desktop-commander/node_modules/@wonderwhy-er/desktop-commander/dist/index.js
fi
if sel circleci; then
  inst circleci @circleci/mcp-server-circleci@0.20.0
  $L --name circleci --package @circleci/mcp-server-circleci --registry npm --version 0.20.0 --env CIRCLECI_TOKEN=dummy --out $S/circleci.json -- node $B/circleci/node_modules/@circleci/mcp-server-circleci/dist/index.js
fi
if sel lara; then
  inst lara @translated/lara-mcp@1.0.6
  $L --name lara --package @translated/lara-mcp --registry npm --version 1.0.6 --env LARA_ACCESS_KEY_ID=dummy --env LARA_ACCESS_KEY_SECRET=dummy --out $S/lara.json -- node $B/lara/node_modules/@translated/lara-mcp/dist/index.js
fi
if sel brave-search; then
  inst brave-search @brave/brave-search-mcp-server@2.1.4
  $L --name brave-search --package @brave/brave-search-mcp-server --registry npm --version 2.1.4 --env BRAVE_API_KEY=dummy --out $S/brave-search.json -- node $B/brave-search/node_modules/@brave/brave-search-mcp-server/dist/index.js
fi
if sel jira; then
  inst jira @aashari/mcp-server-atlassian-jira@3.3.0
  $L --name jira --package @aashari/mcp-server-atlassian-jira --registry npm --version 3.3.0 --env ATLASSIAN_SITE_NAME=dummy --env ATLASSIAN_USER_EMAIL=dummy@example.com --env ATLASSIAN_API_TOKEN=dummy --out $S/jira.json -- node $B/jira/node_modules/@aashari/mcp-server-atlassian-jira/dist/index.js
fi
if sel google-calendar; then
  inst google-calendar @cocal/google-calendar-mcp@2.6.3
  $L --name google-calendar --package @cocal/google-calendar-mcp --registry npm --version 2.6.3 --env GOOGLE_OAUTH_CREDENTIALS=/tmp/eval-collect/scratch/gcp-oauth.keys.json --out $S/google-calendar.json -- node $B/google-calendar/node_modules/@cocal/google-calendar-mcp/build/index.js
fi
if sel discord; then
  inst discord mcp-discord@1.3.4
  $L --name discord --package mcp-discord --registry npm --version 1.3.4 --env DISCORD_TOKEN=dummy --out $S/discord.json -- node $B/discord/node_modules/mcp-discord/build/index.js
fi
if sel asana; then
  inst asana @roychri/mcp-server-asana@1.8.0
  $L --name asana --package @roychri/mcp-server-asana --registry npm --version 1.8.0 --env ASANA_ACCESS_TOKEN=dummy --out $S/asana.json -- node $B/asana/node_modules/@roychri/mcp-server-asana/dist/index.js
fi
if sel gmail; then
  inst gmail @gongrzhe/server-gmail-autoauth-mcp@1.1.11
  $L --name gmail --package @gongrzhe/server-gmail-autoauth-mcp --registry npm --version 1.1.11 --env GMAIL_OAUTH_PATH=/tmp/eval-collect/scratch/gcp-oauth.keys.json --env GMAIL_CREDENTIALS_PATH=/tmp/eval-collect/scratch/gmail-credentials.json --out $S/gmail.json -- node $B/gmail/node_modules/@gongrzhe/server-gmail-autoauth-mcp/dist/index.js
fi
if sel todoist; then
  inst todoist @doist/todoist-mcp@11.0.0
  $L --name todoist --package @doist/todoist-mcp --registry npm --version 11.0.0 --env TODOIST_API_KEY=dummy --out $S/todoist.json -- node $B/todoist/node_modules/@doist/todoist-mcp/dist/main.js
fi
if sel linear; then
  inst linear @tacticlaunch/mcp-linear@1.4.3
  $L --name linear --package @tacticlaunch/mcp-linear --registry npm --version 1.4.3 --env LINEAR_API_TOKEN=dummy --out $S/linear.json -- node $B/linear/node_modules/@tacticlaunch/mcp-linear/dist/index.js
fi
if sel chart; then
  inst chart @antv/mcp-server-chart@0.9.10
  $L --name chart --package @antv/mcp-server-chart --registry npm --version 0.9.10 --out $S/chart.json -- node $B/chart/node_modules/@antv/mcp-server-chart/build/index.js
fi
if sel redis; then
  redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 || redis-server --port 6379 --bind 127.0.0.1 --daemonize yes --save ""
  inst redis @modelcontextprotocol/server-redis@2025.4.25
  $L --name redis --package @modelcontextprotocol/server-redis --registry npm --version 2025.4.25 --out $S/redis.json -- node $B/redis/node_modules/@modelcontextprotocol/server-redis/dist/index.js redis://127.0.0.1:6379
fi
