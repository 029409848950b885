"""The one typed task model (`model.py`) and the parsing helpers benchmark plugins share (Markdown sections,
path resolution, field errors, grader code checks). Which formats exist is clawkube.benchmarks' business."""
