#!/usr/bin/env python3
"""A stand-in browser for tests of `mcp-host auth login`: opens the authorization URL without
following its redirect (the test authorization server approves at once and redirects to the
client's loopback address), then visits that address, as a browser would."""
import sys
import urllib.error
import urllib.request


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


try:
    urllib.request.build_opener(NoRedirect).open(sys.argv[1], timeout=10)
    sys.exit("the authorization URL did not redirect")
except urllib.error.HTTPError as e:
    location = e.headers.get("Location")
if not location:
    sys.exit("no Location in the authorization answer")
urllib.request.urlopen(location, timeout=10).read()
