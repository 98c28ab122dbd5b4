"""What CI systems read from a marathon session: schema-valid junit (Jenkins, GitLab), an
OpenMetrics file (GitLab's metrics report) and a Markdown step summary (GitHub Actions).

Each module turns finished `MarathonResult`s into one of these shapes; the plugin decides when.
"""
