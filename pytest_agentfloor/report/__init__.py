"""Reports: terminal tables at session end and report files."""
