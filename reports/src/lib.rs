//! Turns simulation runs and model checks into JSON, Markdown, HTML with SVG
//! pictures and JUnit XML. (Work in progress: see the issues.)
