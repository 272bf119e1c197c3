from pathlib import Path
from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer, error_code

async def test_scratch(workspace: Path, kiln_home: Path) -> None:
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        base = {"processId": None, "capabilities": {}}
        reply = await server.request("init", "initialize", {**base, "rootUri": "file://[x/y"})
        print("FIRST", reply)
        reply = await server.request("init2", "initialize", {**base, "rootUri": workspace.as_uri()})
        print("SECOND", str(reply)[:300])
        reply = await server.request("init3", "initialize", {**base, "workspaceFolders": [{"uri": "file://[x/y", "name": "x"}], "rootUri": workspace.as_uri()})
        print("THIRD", str(reply)[:300])
    finally:
        await server.close()
