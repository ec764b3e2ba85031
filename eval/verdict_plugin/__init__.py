"""The directory put first on the test run's PYTHONPATH: it holds only `tpb_verdict`, the pytest
plugin that streams verdicts to the harness, so that no module of the framework under test can
shadow it. The harness imports the same file as `eval.verdict_plugin.tpb_verdict` for the frame
format."""
