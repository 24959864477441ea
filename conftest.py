"""Repository conftest: the place to extend grading with the plugin's hooks.

For example, to replace the answer obligation or add one of your own:

    def pytest_agentfloor_check_obligation(code, case, trajectory):
        if code == "Q" and case.id == "A03":
            ...  # return a grading.Verdict to decide it, or None for the default
"""
