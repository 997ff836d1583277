"""group-grade: grade a whole group of policy attempts and turn the verdict into advantages."""
