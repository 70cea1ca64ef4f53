"""(see README)"""
