-- options: --sandbox
-- no shell in the sandbox
os.execute("ls")
