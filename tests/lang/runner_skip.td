# Runner self-test: a file can opt out, and the reason is reported as a
# SKIP in the test log (never skipped silently).
# runner: skip demonstrates `# runner: skip`; this file is never run
fn main() {
  print(this_would_fail)
}
